/**
 * The rules of an artifact's fields (contracts §2, 4; spec §2.1 rule 3): what may be published,
 * where it lands in the TUF repository, and what a PATCH may change. Pure: no I/O.
 */
import { ARTIFACT_KINDS, IDENTIFIER_PATTERNS, OS_BUNDLE_KIND, RAUC_MEDIA_TYPE } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';

const FILENAME_RE = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,127}$/;
const LABEL_KEY_RE = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/;

export interface ArtifactFields {
  name: string;
  version: string;
  kind: string;
  media_type?: string;
  filename: string;
}

/** Checks every multipart field, naming the first bad one (spec §7: 400 naming the field). */
export function checkArtifactFields(f: { name?: unknown; version?: unknown; kind?: unknown; media_type?: unknown; filename?: unknown }): ArtifactFields {
  // contracts §4: artifact names use the device-name pattern; versions their own
  if (typeof f.name !== 'string' || !IDENTIFIER_PATTERNS.artifactName.test(f.name)) {
    throw new ServerError('ARTIFACT_INVALID', `name: must match ${IDENTIFIER_PATTERNS.artifactName.source}`);
  }
  if (typeof f.version !== 'string' || !IDENTIFIER_PATTERNS.version.test(f.version)) {
    throw new ServerError('ARTIFACT_INVALID', `version: must match ${IDENTIFIER_PATTERNS.version.source}`);
  }
  // contracts §2: every component kind an artifact can be published as (members and refused-as-member kinds)
  if (typeof f.kind !== 'string' || !(ARTIFACT_KINDS as readonly string[]).includes(f.kind)) {
    throw new ServerError('ARTIFACT_INVALID', `kind: must be one of ${ARTIFACT_KINDS.join(', ')}`);
  }
  if (f.media_type !== undefined && (typeof f.media_type !== 'string' || !IDENTIFIER_PATTERNS.mediaType.test(f.media_type))) {
    throw new ServerError('ARTIFACT_INVALID', 'media_type: must be a media type like application/octet-stream');
  }
  if (typeof f.filename !== 'string' || !FILENAME_RE.test(f.filename)) {
    throw new ServerError('ARTIFACT_INVALID', `file: file name must match ${FILENAME_RE.source}`);
  }
  // spec §2.1 rule 3: an os-bundle is a RAUC bundle (.raucb, application/vnd.rauc.bundle)
  if (f.kind === OS_BUNDLE_KIND) {
    if (!f.filename.endsWith('.raucb')) throw new ServerError('ARTIFACT_INVALID', 'file: an os-bundle file name must end in .raucb');
    if (f.media_type !== undefined && f.media_type !== RAUC_MEDIA_TYPE) {
      throw new ServerError('ARTIFACT_INVALID', `media_type: an os-bundle must be ${RAUC_MEDIA_TYPE}`);
    }
  }
  const out: ArtifactFields = { name: f.name, version: f.version, kind: f.kind, filename: f.filename };
  if (typeof f.media_type === 'string') out.media_type = f.media_type;
  return out;
}

export function defaultMediaType(kind: string): string {
  if (kind === OS_BUNDLE_KIND) return RAUC_MEDIA_TYPE;
  if (kind === 'container') return 'application/vnd.oci.image.manifest.v1+json';
  return 'application/octet-stream';
}

/** The TUF target path scheme of artifacts (docs/publish-and-deploy.md). */
export function artifactTargetPath(f: Pick<ArtifactFields, 'name' | 'version' | 'filename'>): string {
  return `artifacts/${f.name}/${f.version}/${f.filename}`;
}

/** What a PATCH writes: the mutable fields it names, checked. */
export interface ArtifactChanges {
  description?: string | null;
  labels?: Record<string, string>;
}

const MUTABLE = new Set(['description', 'labels']);
const IMMUTABLE = new Set(['name', 'version', 'digest', 'length', 'kind', 'target', 'media_type', 'id', 'filename']);

/** PATCH: description and labels only; identity fields are immutable (signed bytes never change). */
export function checkArtifactChanges(body: Record<string, unknown>): ArtifactChanges {
  for (const k of Object.keys(body)) {
    if (IMMUTABLE.has(k)) throw new ServerError('ARTIFACT_IMMUTABLE', `${k}: is immutable once published`);
    if (!MUTABLE.has(k)) throw new ServerError('ARTIFACT_INVALID', `${k}: unknown field`);
  }
  const out: ArtifactChanges = {};
  if ('description' in body) {
    const d = body['description'];
    if (d !== null && (typeof d !== 'string' || d.length > 4096))
      throw new ServerError('ARTIFACT_INVALID', 'description: must be a string of at most 4096 characters or null');
    out.description = d;
  }
  if ('labels' in body) {
    const l = body['labels'];
    if (typeof l !== 'object' || l === null || Array.isArray(l)) throw new ServerError('ARTIFACT_INVALID', 'labels: must be an object of string values');
    const entries = Object.entries(l as Record<string, unknown>);
    if (entries.length > 64) throw new ServerError('ARTIFACT_INVALID', 'labels: at most 64 labels');
    for (const [k, v] of entries) {
      if (!LABEL_KEY_RE.test(k)) throw new ServerError('ARTIFACT_INVALID', `labels.${k}: label keys must match ${LABEL_KEY_RE.source}`);
      if (typeof v !== 'string' || v.length > 256) throw new ServerError('ARTIFACT_INVALID', `labels.${k}: must be a string of at most 256 characters`);
    }
    out.labels = l as Record<string, string>;
  }
  return out;
}
