/**
 * Artifacts (spec 1.2, 2 Artifact; contracts 4, 6). Publish order is the point of this file:
 * stream the file into the blob store while hashing -> commit the TUF targets metadata naming
 * it -> ONLY THEN insert the record. A crash between the last two leaves a signed target and no
 * record; the retry re-publishes the identical entry (a no-op in the repository) and inserts.
 */
import type { Readable } from 'node:stream';
import { isUniqueViolation, type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import { DEFAULT_MAX_ARTIFACT_BYTES, type PipelineDeps } from '../resources/pipeline-deps.js';
import { isBlobError } from '../blobs/index.js';
import { isSigningRepoError } from '../signing-repo/errors.js';
import { ServerError } from '../errors/server-error.js';

// contracts 4: artifact names use the device-name pattern; versions their own
export const ARTIFACT_NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
export const ARTIFACT_VERSION_RE = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;
// contracts 2: every component kind an artifact can be published as (members and refused-as-member kinds)
export const ARTIFACT_KINDS = [
  'container', 'model', 'config', 'service-binary', 'os-bundle',
  'maintenance-window', 'min-agent', 'compose', 'os-package', 'package-manager',
] as const;
const MEDIA_TYPE_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
const FILENAME_RE = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,127}$/;
export const RAUC_MEDIA_TYPE = 'application/vnd.rauc.bundle';

export interface ArtifactFields {
  name: string;
  version: string;
  kind: string;
  media_type?: string;
  filename: string;
}

export interface ArtifactView {
  id: string;
  name: string;
  version: string;
  kind: string;
  digest: string;
  length: number;
  media_type: string;
  target: string;
  filename: string;
  source: string;
  description: string | null;
  labels: Record<string, string>;
  has_sbom: boolean;
  created_at: string;
  updated_at: string;
}

/** Checks every multipart field, naming the first bad one (spec 7: 400 naming the field). */
export function checkArtifactFields(f: { name?: unknown; version?: unknown; kind?: unknown; media_type?: unknown; filename?: unknown }): ArtifactFields {
  if (typeof f.name !== 'string' || !ARTIFACT_NAME_RE.test(f.name)) throw new ServerError('ARTIFACT_INVALID', `name: must match ${ARTIFACT_NAME_RE.source}`);
  if (typeof f.version !== 'string' || !ARTIFACT_VERSION_RE.test(f.version)) {
    throw new ServerError('ARTIFACT_INVALID', `version: must match ${ARTIFACT_VERSION_RE.source}`);
  }
  if (typeof f.kind !== 'string' || !(ARTIFACT_KINDS as readonly string[]).includes(f.kind)) {
    throw new ServerError('ARTIFACT_INVALID', `kind: must be one of ${ARTIFACT_KINDS.join(', ')}`);
  }
  if (f.media_type !== undefined && (typeof f.media_type !== 'string' || !MEDIA_TYPE_RE.test(f.media_type))) {
    throw new ServerError('ARTIFACT_INVALID', 'media_type: must be a media type like application/octet-stream');
  }
  if (typeof f.filename !== 'string' || !FILENAME_RE.test(f.filename)) {
    throw new ServerError('ARTIFACT_INVALID', `file: file name must match ${FILENAME_RE.source}`);
  }
  // spec 2.1.3: an os-bundle is a RAUC bundle (.raucb, application/vnd.rauc.bundle)
  if (f.kind === 'os-bundle') {
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
  if (kind === 'os-bundle') return RAUC_MEDIA_TYPE;
  if (kind === 'container') return 'application/vnd.oci.image.manifest.v1+json';
  return 'application/octet-stream';
}

/** The TUF target path scheme of artifacts (docs/pipeline.md). */
export function artifactTargetPath(f: Pick<ArtifactFields, 'name' | 'version' | 'filename'>): string {
  return `artifacts/${f.name}/${f.version}/${f.filename}`;
}

/** Stream the bytes into the blob store (hashing on the way, capped): nothing is buffered whole. */
export async function storeArtifactBytes(deps: PipelineDeps, file: Readable | AsyncIterable<Uint8Array>): Promise<{ digest: string; length: number }> {
  const max = deps.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
  try {
    return await deps.blobs.put(file, { maxBytes: max });
  } catch (e) {
    if (isBlobError(e) && e.code === 'BLOB_TOO_LARGE') throw new ServerError('ARTIFACT_TOO_LARGE', `file: larger than the ${max}-byte upload limit`, { cause: e });
    throw e;
  }
}

/**
 * Publish stored bytes as an artifact: metadata first, record second (spec 1.2). `source`
 * says where the bytes came from (`upload` or `registry:<id>`).
 */
export async function publishArtifact(
  deps: PipelineDeps,
  tenantId: string,
  fields: ArtifactFields,
  blob: { digest: string; length: number },
  source = 'upload',
): Promise<ArtifactView> {
  const db = deps.db;
  const existing = await db.selectFrom('artifacts').select('id').where('tenant_id', '=', tenantId).where('name', '=', fields.name).where('version', '=', fields.version).executeTakeFirst();
  // spec 7: a duplicate version conflicts (checked before touching the repository)
  if (existing) throw duplicate(fields);
  const mediaType = fields.media_type ?? defaultMediaType(fields.kind);
  const target = artifactTargetPath(fields);
  try {
    await deps.publishTargets(
      tenantId,
      [{ path: target, digest: blob.digest as never, length: blob.length, custom: { kind: fields.kind, media_type: mediaType, name: fields.name, version: fields.version } }],
      // a published artifact path never changes its bytes; an identical retry is a no-op
      { immutable: true },
    );
  } catch (e) {
    if (isSigningRepoError(e, 'TARGET_IMMUTABLE')) throw duplicate(fields, e);
    throw e;
  }
  await deps.hooks?.afterTargetsCommitted?.(target);
  const now = deps.clock();
  try {
    const row = await db
      .insertInto('artifacts')
      .values({
        tenant_id: tenantId,
        name: fields.name,
        version: fields.version,
        kind: fields.kind,
        media_type: mediaType,
        filename: fields.filename,
        digest: blob.digest,
        length: blob.length,
        target,
        source,
        description: null,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return (await getArtifact(db, tenantId, row.id))!;
  } catch (e) {
    if (isUniqueViolation(e)) throw duplicate(fields, e);
    throw e;
  }
}

function duplicate(f: ArtifactFields, cause?: unknown): ServerError {
  return new ServerError('ARTIFACT_EXISTS', `version: ${f.name} ${f.version} is already published`, { cause });
}

type ArtifactRow = {
  id: string; name: string; version: string; kind: string; digest: string; length: string | number; media_type: string; target: string;
  filename: string; source: string; description: string | null; labels: Record<string, string>; created_at: Date; updated_at: Date; has_sbom?: unknown;
};

export function artifactView(r: ArtifactRow): ArtifactView {
  return {
    id: r.id,
    name: r.name,
    version: r.version,
    kind: r.kind,
    digest: r.digest,
    length: Number(r.length),
    media_type: r.media_type,
    target: r.target,
    filename: r.filename,
    source: r.source,
    description: r.description,
    labels: r.labels ?? {},
    has_sbom: r.has_sbom === true || r.has_sbom === 1,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

export async function getArtifact(db: Db, tenantId: string, id: string): Promise<ArtifactView | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await db
    .selectFrom('artifacts as a')
    .leftJoin('artifact_sboms as s', 's.artifact_id', 'a.id')
    .selectAll('a')
    .select((eb) => eb('s.artifact_id', 'is not', null).as('has_sbom'))
    .where('a.tenant_id', '=', tenantId)
    .where('a.id', '=', id)
    .executeTakeFirst();
  return r ? artifactView(r) : undefined;
}
