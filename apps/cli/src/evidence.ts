/**
 * Offline verification of a case evidence archive (the server's `GET /cases/{id}/export`): a tar
 * whose `manifest.dsse.json` is a DSSE envelope, signed with the tenant's Ed25519 evidence key,
 * over `manifest.json`, which lists every other file of the archive with its length and SHA-256.
 * The archive is read as a stream and each entry hashed as it passes: memory holds the two
 * manifest files and one digest per entry, whatever the archive's size.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { extract } from 'tar-stream';
import { digestFromHex, parseEnvelope, parsePublicKeyPem, ReleaseError, sha256Digest, verifyEnvelope, type Digest, type PublicKey } from '@svc/release-core';
import { CliError } from './errors.js';

/** DSSE payload type of a case-export manifest. */
export const EVIDENCE_MANIFEST_TYPE = 'svc.case-evidence.v1';
/** Bytes of manifest.json and of manifest.dsse.json. */
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

const MANIFEST = 'manifest.json';
const ENVELOPE = 'manifest.dsse.json';

export interface ArchiveContents {
  /** Every entry but the two manifest files: path -> hex SHA-256 and length. */
  files: Map<string, { sha256: string; length: number }>;
  manifest: Buffer | undefined;
  envelope: Buffer | undefined;
}

function invalid(why: string): CliError<'EVIDENCE_INVALID'> {
  return new CliError('EVIDENCE_INVALID', why);
}

/** Streams the tar at `path`, hashing each entry. A path that cannot be opened is a usage error. */
export async function readArchive(path: string): Promise<ArchiveContents> {
  const input = createReadStream(path);
  await new Promise<void>((resolve, reject) => {
    input.once('open', () => resolve());
    input.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          'INPUT_UNREADABLE',
          `archive ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : (e.code ?? 'cannot read')}`,
          { cause: e },
        ),
      ),
    );
  });
  const out: ArchiveContents = { files: new Map(), manifest: undefined, envelope: undefined };
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('entry', (header, stream, next) => {
      const name = header.name;
      const keep = name === MANIFEST || name === ENVELOPE;
      const hash = createHash('sha256');
      const kept: Buffer[] = [];
      let length = 0;
      stream.on('data', (data: unknown) => {
        const chunk = data as Buffer;
        length += chunk.length;
        if (keep) {
          if (length > MAX_MANIFEST_BYTES) return stream.destroy(invalid(`${name}: larger than ${MAX_MANIFEST_BYTES} bytes`));
          kept.push(chunk);
        } else hash.update(chunk);
      });
      stream.on('error', reject);
      stream.on('end', () => {
        if (header.type !== 'file') return next(invalid(`${name}: not a regular file (${header.type})`));
        if (out.files.has(name) || (name === MANIFEST && out.manifest) || (name === ENVELOPE && out.envelope))
          return next(invalid(`${name}: appears twice in the archive`));
        if (name === MANIFEST) out.manifest = Buffer.concat(kept);
        else if (name === ENVELOPE) out.envelope = Buffer.concat(kept);
        else out.files.set(name, { sha256: hash.digest('hex'), length });
        next();
      });
    });
    ex.on('finish', resolve);
    ex.on('error', (e: Error) => reject(e instanceof CliError ? e : invalid(`not a readable tar archive (${e.message})`)));
  });
  input.on('error', (e) => ex.destroy(e));
  input.pipe(ex);
  await done;
  return out;
}

export interface ManifestFile {
  path: string;
  length: number;
  digest: string;
}

export interface EvidenceManifest {
  type: string;
  tenant: string;
  case: { id: string; kind: string; state: string; title: string };
  exported_at: string;
  exported_by: string;
  key: { keyid: string };
  files: ManifestFile[];
}

/** The manifest's shape, every problem named once (the signature already verified). */
export function parseManifest(payload: Uint8Array): EvidenceManifest {
  let m: unknown;
  try {
    m = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
  } catch (e) {
    throw invalid(`manifest: not UTF-8 JSON (${(e as Error).message})`);
  }
  const o = m as Partial<EvidenceManifest>;
  if (typeof m !== 'object' || m === null || o.type !== EVIDENCE_MANIFEST_TYPE) throw invalid(`manifest: type must be ${EVIDENCE_MANIFEST_TYPE}`);
  if (typeof o.tenant !== 'string' || typeof o.case?.id !== 'string' || typeof o.exported_at !== 'string' || !Array.isArray(o.files)) {
    throw invalid('manifest: tenant, case.id, exported_at and files are required');
  }
  o.files.forEach((f, i) => {
    if (typeof f?.path !== 'string' || !Number.isSafeInteger(f.length) || typeof f.digest !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(f.digest)) {
      throw invalid(`manifest: files[${i}] must have path, length and a sha256: digest`);
    }
  });
  return o as EvidenceManifest;
}

/** Every listed file is in the archive with its length and digest, and nothing else is. */
export function checkFiles(manifest: EvidenceManifest, contents: ArchiveContents): void {
  const listed = new Set<string>();
  for (const f of manifest.files) {
    if (listed.has(f.path)) throw invalid(`manifest: ${f.path} is listed twice`);
    listed.add(f.path);
    const got = contents.files.get(f.path);
    if (got === undefined) throw invalid(`${f.path}: listed in the manifest, missing from the archive`);
    if (digestFromHex(got.sha256) !== f.digest || got.length !== f.length) {
      throw invalid(`${f.path}: ${digestFromHex(got.sha256)} (${got.length} bytes) does not match the manifest's ${f.digest} (${f.length} bytes)`);
    }
  }
  for (const path of contents.files.keys()) if (!listed.has(path)) throw invalid(`${path}: in the archive, not in the signed manifest`);
}

export interface VerifiedArchive {
  manifest: EvidenceManifest;
  /** Key id of the evidence key that signed the manifest. */
  keyid: string;
  /** SHA-256 of the signed manifest bytes. */
  manifestDigest: Digest;
}

/** One evidence key of the published history (`GET /api/v1/evidence-keys`). */
export interface HistoryKey {
  seq: number;
  key: PublicKey;
  validFrom: Date;
  /** Undefined while the key is current. */
  validUntil: Date | undefined;
}

/** Bytes of the published key history (`--keys`). */
export const MAX_HISTORY_BYTES = 4 * 1024 * 1024;

function historyInvalid(why: string): CliError<'EVIDENCE_INVALID'> {
  return invalid(`key history: ${why}`);
}

function isoDate(value: unknown, field: string): Date {
  const d = typeof value === 'string' ? new Date(value) : undefined;
  if (d === undefined || Number.isNaN(d.getTime())) throw historyInvalid(`${field} must be an ISO 8601 time`);
  return d;
}

/**
 * The published evidence key history: the JSON `GET /api/v1/evidence-keys` answers
 * (`{"evidence_keys": [{seq, keyid, public_key_pem, valid_from, valid_until}, ...]}`). Each
 * key id must be its public key's; an entry that is not is refused, not skipped.
 */
export function parseKeyHistory(text: string): HistoryKey[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw historyInvalid(`not JSON (${(e as Error).message})`);
  }
  const entries = (doc as { evidence_keys?: unknown } | null)?.evidence_keys;
  if (!Array.isArray(entries) || entries.length === 0) throw historyInvalid('evidence_keys must be a non-empty array (the body of GET /api/v1/evidence-keys)');
  return entries.map((e: Record<string, unknown> | null, i) => {
    const at = `evidence_keys[${i}]`;
    if (typeof e !== 'object' || e === null || typeof e['keyid'] !== 'string' || typeof e['public_key_pem'] !== 'string') {
      throw historyInvalid(`${at} must have keyid and public_key_pem`);
    }
    let key: PublicKey;
    try {
      key = parsePublicKeyPem(e['public_key_pem']);
    } catch (cause) {
      throw historyInvalid(`${at}.public_key_pem: ${(cause as Error).message}`);
    }
    if (key.keyid !== e['keyid']) throw historyInvalid(`${at}.keyid ${e['keyid']} is not the key id of its public key (${key.keyid})`);
    const validFrom = isoDate(e['valid_from'], `${at}.valid_from`);
    const validUntil = e['valid_until'] === null ? undefined : isoDate(e['valid_until'], `${at}.valid_until`);
    if (validUntil !== undefined && validUntil < validFrom) throw historyInvalid(`${at}: valid_until is before valid_from`);
    return { seq: typeof e['seq'] === 'number' ? e['seq'] : i + 1, key, validFrom, validUntil };
  });
}

/** Which keys an archive is checked against: one pinned key, or the published history. */
export type EvidenceTrust = { key: PublicKey } | { history: readonly HistoryKey[] };

/**
 * Verifies a read archive against the tenant's evidence key: a pinned key, or the published
 * history, where the key is picked by the id the signature names and the export time must lie
 * within its validity period (an export signed by a retired key after it was retired, or
 * dated before the key existed, is refused). The manifest is the envelope's signed payload,
 * never the tar's manifest.json; that file must still be present and equal the payload byte
 * for byte, so an archive is accepted only whole: every file listed, each with its length and
 * digest, nothing more, and both manifest files. The manifest names the key that signed it.
 */
export function verifyArchive(contents: ArchiveContents, trust: EvidenceTrust, opts: { tenant?: string } = {}): VerifiedArchive {
  if (contents.envelope === undefined) throw invalid(`${ENVELOPE}: missing from the archive`);
  // verify the signature over the raw payload bytes, then parse
  const envelope = parseEnvelope(contents.envelope, { payloadTypes: [EVIDENCE_MANIFEST_TYPE], maxBytes: MAX_MANIFEST_BYTES });
  const keys = 'key' in trust ? [trust.key] : trust.history.map((h) => h.key);
  let verified: ReturnType<typeof verifyEnvelope>;
  try {
    verified = verifyEnvelope(envelope, keys, { payloadType: EVIDENCE_MANIFEST_TYPE, algorithms: ['ed25519'] });
  } catch (e) {
    // a signature that names an evidence key and does not verify with it was made by another key
    if (e instanceof ReleaseError && e.code === 'SIGNATURE_INVALID')
      throw new ReleaseError('KEY_UNTRUSTED', `not signed by the evidence key it names (${e.message})`, { cause: e });
    throw e;
  }
  if (contents.manifest === undefined) throw invalid(`${MANIFEST}: missing from the archive`);
  if (!Buffer.from(verified.payload).equals(contents.manifest)) throw invalid(`${MANIFEST}: differs from the signed manifest`);
  const manifest = parseManifest(verified.payload);
  if (manifest.key?.keyid !== verified.keyid) throw invalid(`manifest: names key ${String(manifest.key?.keyid)}, signed by ${verified.keyid}`);
  if (opts.tenant !== undefined && manifest.tenant !== opts.tenant) throw invalid(`manifest: names tenant ${manifest.tenant}, not ${opts.tenant}`);
  if ('history' in trust) {
    const key = trust.history.find((h) => h.key.keyid === verified.keyid)!;
    const exportedAt = new Date(manifest.exported_at);
    const period = `${key.validFrom.toISOString()} to ${key.validUntil?.toISOString() ?? 'now'}`;
    if (Number.isNaN(exportedAt.getTime())) throw invalid(`manifest: exported_at ${manifest.exported_at} is not a time`);
    if (exportedAt < key.validFrom || (key.validUntil !== undefined && exportedAt > key.validUntil)) {
      throw invalid(`manifest: exported at ${manifest.exported_at}, outside the validity of evidence key ${key.seq} (${period})`);
    }
  }
  checkFiles(manifest, contents);
  return { manifest, keyid: verified.keyid, manifestDigest: sha256Digest(verified.payload) };
}
