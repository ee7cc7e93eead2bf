import { createHash } from 'node:crypto';
import { Metadata, MetadataKind, MetaFile, Root, Snapshot, Targets, TargetFile, Timestamp } from '@tufjs/models';
import { tufExpires } from './expiry.js';
import { tufSigner, type SigningKey } from './keys.js';

/** TUF specification version written into every role. */
export const TUF_SPEC_VERSION = '1.0.31';

type OnlineRole = 'targets' | 'snapshot' | 'timestamp';

/** Serialized bytes of signed metadata, exactly what is stored and served. */
export function encodeMetadata(md: Metadata<Root | Targets | Snapshot | Timestamp>): Buffer {
  return Buffer.from(JSON.stringify(md.toJSON()));
}

/** A metadata document as @tufjs/models reads it. */
type MetadataJson = Parameters<typeof Metadata.fromJSON>[1];

/** Parses metadata the repository itself wrote (trusted bytes from its own table). */
export function decodeRoot(bytes: Uint8Array): Metadata<Root> {
  return Metadata.fromJSON(MetadataKind.Root, JSON.parse(Buffer.from(bytes).toString('utf8')) as MetadataJson);
}
export function decodeTargets(bytes: Uint8Array): Metadata<Targets> {
  return Metadata.fromJSON(MetadataKind.Targets, JSON.parse(Buffer.from(bytes).toString('utf8')) as MetadataJson);
}
export function decodeSnapshot(bytes: Uint8Array): Metadata<Snapshot> {
  return Metadata.fromJSON(MetadataKind.Snapshot, JSON.parse(Buffer.from(bytes).toString('utf8')) as MetadataJson);
}
export function decodeTimestamp(bytes: Uint8Array): Metadata<Timestamp> {
  return Metadata.fromJSON(MetadataKind.Timestamp, JSON.parse(Buffer.from(bytes).toString('utf8')) as MetadataJson);
}

/** A root with one key per online role, `rootKeys` for root, consistent snapshots on. */
export function buildRoot(opts: {
  version: number;
  now: Date;
  rootKeys: SigningKey[];
  rootThreshold: number;
  online: Record<OnlineRole, SigningKey>;
}): Metadata<Root> {
  const root = new Root({
    version: opts.version,
    specVersion: TUF_SPEC_VERSION,
    expires: tufExpires(opts.now, 'root'),
    // consistent snapshots (N.role.json, <sha256>.<name>), so a device never mixes two repository states
    consistentSnapshot: true,
  });
  for (const key of opts.rootKeys) root.addKey(key.tufKey, 'root');
  for (const role of ['targets', 'snapshot', 'timestamp'] as const) root.addKey(opts.online[role].tufKey, role);
  if (opts.rootThreshold === 1) return new Metadata(root);
  // @tufjs/models does not export Role: set the root threshold through its JSON form.
  const json = root.toJSON() as { roles: Record<string, { threshold: number }> };
  const rootRole = json.roles['root'];
  if (rootRole) rootRole.threshold = opts.rootThreshold;
  return new Metadata(Root.fromJSON(json));
}

export function signWith(md: Metadata<Root | Targets | Snapshot | Timestamp>, keys: SigningKey[]): void {
  for (const key of keys) md.sign(tufSigner(key), true);
}

export function buildTargets(version: number, now: Date, targets: Record<string, TargetFile>, key: SigningKey): Metadata<Targets> {
  const md = new Metadata(new Targets({ version, specVersion: TUF_SPEC_VERSION, expires: tufExpires(now, 'targets'), targets }));
  signWith(md, [key]);
  return md;
}

/** Snapshot and timestamp pin length and hash of what they point at, not only the version. */
function metaFile(version: number, bytes: Uint8Array): MetaFile {
  return new MetaFile({ version, length: bytes.byteLength, hashes: { sha256: createHash('sha256').update(bytes).digest('hex') } });
}

export function buildSnapshot(version: number, now: Date, targets: { version: number; bytes: Uint8Array }, key: SigningKey): Metadata<Snapshot> {
  const md = new Metadata(
    new Snapshot({
      version,
      specVersion: TUF_SPEC_VERSION,
      expires: tufExpires(now, 'snapshot'),
      meta: { 'targets.json': metaFile(targets.version, targets.bytes) },
    }),
  );
  signWith(md, [key]);
  return md;
}

export function buildTimestamp(version: number, now: Date, snapshot: { version: number; bytes: Uint8Array }, key: SigningKey): Metadata<Timestamp> {
  const md = new Metadata(
    new Timestamp({
      version,
      specVersion: TUF_SPEC_VERSION,
      expires: tufExpires(now, 'timestamp'),
      snapshotMeta: metaFile(snapshot.version, snapshot.bytes),
    }),
  );
  signWith(md, [key]);
  return md;
}

export function targetFile(path: string, sha256Hex: string, length: number, custom?: Record<string, unknown>): TargetFile {
  return new TargetFile({
    path,
    length,
    hashes: { sha256: sha256Hex },
    ...(custom === undefined ? {} : { unrecognizedFields: { custom: custom as never } }),
  });
}
