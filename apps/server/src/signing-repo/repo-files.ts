import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { digestFromHex, isUuid } from '@svc/release-core';
import { isBlobError, resolveRange, type ByteRange, type ByteRangeRequest } from '../blobs/index.js';
import type { RepoContext } from './context.js';
import { SigningRepoError } from './errors.js';
import type { TufRole } from './expiry.js';
import { latestMetadata, metadataByVersion, findTargetFile, type MetadataRow } from './repo-db.js';
import { assertTargetPath, splitHashedTargetPath } from './target-path.js';

/** A repository file opened for sending, whatever the transport (HTTP, gRPC, mTLS port). */
export interface RepoFile {
  stream: Readable;
  /** Bytes in `stream` (the range length when a range was asked for). */
  length: number;
  /** Length of the whole file. */
  totalLength: number;
  range?: ByteRange;
  contentType: string;
  /** Strong validator: quoted sha256 hex of the whole file. */
  etag: string;
}

export interface MetadataFile {
  role: TufRole;
  version: number;
  bytes: Buffer;
}

const VERSIONED_RE = /^([1-9][0-9]{0,9})\.(root|targets|snapshot)\.json$/;

/**
 * Metadata by file name: `timestamp.json`, `N.root.json`, `N.targets.json`,
 * `N.snapshot.json` (consistent snapshots), and `root.json` = the newest root
 * (for provisioning a device's initial trusted root).
 */
export async function getMetadataFile(ctx: RepoContext, tenantId: string, fileName: string): Promise<MetadataFile> {
  const notFound = () => new SigningRepoError('METADATA_NOT_FOUND', `metadata ${JSON.stringify(fileName)} does not exist`);
  if (!isUuid(tenantId)) throw notFound();
  let role: TufRole;
  let row: MetadataRow | undefined;
  if (fileName === 'timestamp.json' || fileName === 'root.json') {
    role = fileName === 'root.json' ? 'root' : 'timestamp';
    row = await latestMetadata(ctx.db, tenantId, role);
  } else {
    const m = VERSIONED_RE.exec(fileName);
    if (!m) throw notFound();
    role = m[2] as TufRole;
    row = await metadataByVersion(ctx.db, tenantId, role, Number(m[1]));
  }
  if (!row) throw notFound();
  return { role, version: row.version, bytes: row.bytes };
}

/**
 * Opens `metadata/<file>` or `targets/<dir>/<sha256>.<name>` of a tenant's repository.
 * Targets are served only under their hash-prefixed name and only when the tenant
 * published that (path, hash): the blob store is shared, tenants' targets are not.
 */
export async function openRepoFile(ctx: RepoContext, tenantId: string, repoPath: string, range?: ByteRangeRequest): Promise<RepoFile> {
  if (repoPath.startsWith('metadata/')) {
    const file = await getMetadataFile(ctx, tenantId, repoPath.slice('metadata/'.length));
    const etag = `"${createHash('sha256').update(file.bytes).digest('hex')}"`;
    const total = file.bytes.byteLength;
    const r = range === undefined ? undefined : resolveRange(range, total);
    const body = r === undefined ? file.bytes : file.bytes.subarray(r.start, r.end + 1);
    return { stream: Readable.from([body]), length: body.byteLength, totalLength: total, ...(r ? { range: r } : {}), contentType: 'application/json', etag };
  }
  const notFound = () => new SigningRepoError('TARGET_NOT_FOUND', `target ${JSON.stringify(repoPath)} does not exist`);
  if (!repoPath.startsWith('targets/') || !isUuid(tenantId)) throw notFound();
  const split = splitHashedTargetPath(repoPath.slice('targets/'.length));
  if (!split) throw notFound();
  try {
    assertTargetPath(split.path);
  } catch {
    throw notFound();
  }
  const row = await findTargetFile(ctx.db, tenantId, split.path, split.sha256Hex);
  if (!row) throw notFound();
  try {
    const blob = await ctx.blobs.get(digestFromHex(split.sha256Hex), range);
    const length = blob.range ? blob.range.end - blob.range.start + 1 : blob.totalLength;
    return {
      stream: blob.stream,
      length,
      totalLength: blob.totalLength,
      ...(blob.range ? { range: blob.range } : {}),
      contentType: row.mediaType ?? 'application/octet-stream',
      etag: `"${split.sha256Hex}"`,
    };
  } catch (e) {
    if (isBlobError(e, 'BLOB_NOT_FOUND')) throw notFound();
    throw e;
  }
}
