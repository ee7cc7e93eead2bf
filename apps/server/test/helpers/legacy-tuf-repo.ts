/**
 * A tenant's TUF repository in the form the server wrote before TUF metadata followed the TUF
 * specification's key ids: every key in root, every `roles.*.keyids` entry and every
 * `signatures[].keyid` is `sha256:` + hex SHA-256 of the key's SPKI DER (contracts §1's form
 * elsewhere). Written here with @tufjs/models and node:crypto only, none of the server's
 * signing-repository code, straight into the tables and the data dir a server reads:
 *
 *   const legacy = await writeLegacyRepo(db, dataDir, tenantId, { targets: [{ path: 'fw.bin', bytes }] });
 *   // keys/<tenant>/{root,targets,snapshot,timestamp}.pem, blobs, tuf_* rows at version 1
 *
 * Also the independent key id rules the tests check the server's metadata against.
 */
import { createHash, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Key, Metadata, MetaFile, Root, Signature, Snapshot, TargetFile, Targets, Timestamp } from '@tufjs/models';
import type { Kysely } from 'kysely';
import { FsBlobStore } from '../../src/blobs/index.js';

const ROLES = ['root', 'targets', 'snapshot', 'timestamp'] as const;
type Role = (typeof ROLES)[number];

/** The raw 32-byte Ed25519 public key as hex (JWK `x` is its base64url). */
export function rawEd25519Hex(key: KeyObject | string): string {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  return Buffer.from(jwk.x!, 'base64url').toString('hex');
}

/** contracts §1: `sha256:` + hex SHA-256 of the SPKI DER. */
export function spkiKeyId(key: KeyObject | string): string {
  return `sha256:${createHash('sha256')
    .update(createPublicKey(key).export({ format: 'der', type: 'spki' }))
    .digest('hex')}`;
}

/**
 * The TUF specification's KEYID of an Ed25519 key, spelled out byte for byte: SHA-256 of the
 * OLPC canonical JSON of {"keytype","scheme","keyval"} (members sorted, no whitespace).
 */
export function specKeyId(key: KeyObject | string): string {
  const canonical = `{"keytype":"ed25519","keyval":{"public":"${rawEd25519Hex(key)}"},"scheme":"ed25519"}`;
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

export interface LegacyRepo {
  /** PKCS#8 PEM of each role key (also written to keys/<tenant>/<role>.pem). */
  pems: Record<Role, string>;
  /** The `sha256:` key id of each role key, as the legacy metadata names it. */
  ids: Record<Role, string>;
}

function expiresIn(now: Date, days: number): string {
  return new Date(now.getTime() + days * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function signed<T extends Root | Targets | Snapshot | Timestamp>(body: T, key: KeyObject, keyId: string): Metadata<T> {
  const md = new Metadata(body);
  md.sign((data) => new Signature({ keyID: keyId, sig: sign(null, data, key).toString('hex') }));
  return md;
}

function bytesOf(md: Metadata<Root | Targets | Snapshot | Timestamp>): Buffer {
  return Buffer.from(JSON.stringify(md.toJSON()));
}

function metaFile(version: number, bytes: Buffer): MetaFile {
  return new MetaFile({ version, length: bytes.length, hashes: { sha256: createHash('sha256').update(bytes).digest('hex') } });
}

/** Writes keys, blobs and version 1 of every role for `tenantId` (whose tenants row exists). */
export async function writeLegacyRepo(
  db: Kysely<any>,
  dataDir: string,
  tenantId: string,
  opts: { now?: Date; targets?: { path: string; bytes: Buffer }[] } = {},
): Promise<LegacyRepo> {
  const now = opts.now ?? new Date();
  const keys = Object.fromEntries(ROLES.map((r) => [r, generateKeyPairSync('ed25519').privateKey])) as Record<Role, KeyObject>;
  const pems = Object.fromEntries(ROLES.map((r) => [r, keys[r].export({ format: 'pem', type: 'pkcs8' }).toString()])) as Record<Role, string>;
  const ids = Object.fromEntries(ROLES.map((r) => [r, spkiKeyId(keys[r])])) as Record<Role, string>;
  const dir = join(dataDir, 'keys', tenantId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const r of ROLES) {
    await writeFile(join(dir, `${r}.pem`), pems[r], { mode: 0o600 });
    await chmod(join(dir, `${r}.pem`), 0o600);
  }

  const root = new Root({ version: 1, specVersion: '1.0.31', expires: expiresIn(now, 365), consistentSnapshot: true });
  for (const r of ROLES) root.addKey(new Key({ keyID: ids[r], keyType: 'ed25519', scheme: 'ed25519', keyVal: { public: rawEd25519Hex(keys[r]) } }), r);
  const blobs = new FsBlobStore(join(dataDir, 'blobs'));
  const files: Record<string, TargetFile> = {};
  const fileRows: { path: string; sha256: string; length: number }[] = [];
  for (const t of opts.targets ?? []) {
    const info = await blobs.put(Readable.from([t.bytes]));
    const sha256 = info.digest.slice('sha256:'.length);
    files[t.path] = new TargetFile({ path: t.path, length: info.length, hashes: { sha256 } });
    fileRows.push({ path: t.path, sha256, length: info.length });
  }
  const targets = bytesOf(signed(new Targets({ version: 1, specVersion: '1.0.31', expires: expiresIn(now, 90), targets: files }), keys.targets, ids.targets));
  const snapshot = bytesOf(
    signed(
      new Snapshot({ version: 1, specVersion: '1.0.31', expires: expiresIn(now, 7), meta: { 'targets.json': metaFile(1, targets) } }),
      keys.snapshot,
      ids.snapshot,
    ),
  );
  const timestamp = bytesOf(
    signed(
      new Timestamp({ version: 1, specVersion: '1.0.31', expires: expiresIn(now, 1), snapshotMeta: metaFile(1, snapshot) }),
      keys.timestamp,
      ids.timestamp,
    ),
  );
  const rows = [
    { role: 'root', bytes: bytesOf(signed(root, keys.root, ids.root)), expires_at: expiresIn(now, 365) },
    { role: 'targets', bytes: targets, expires_at: expiresIn(now, 90) },
    { role: 'snapshot', bytes: snapshot, expires_at: expiresIn(now, 7) },
    { role: 'timestamp', bytes: timestamp, expires_at: expiresIn(now, 1) },
  ];
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('tuf_repositories').values({ tenant_id: tenantId }).execute();
    for (const r of rows)
      await trx
        .insertInto('tuf_metadata')
        .values({ tenant_id: tenantId, version: 1, ...r })
        .execute();
    for (const f of fileRows) {
      await trx
        .insertInto('tuf_target_files')
        .values({ tenant_id: tenantId, targets_version: 1, media_type: null, ...f })
        .execute();
    }
  });
  return { pems, ids };
}
