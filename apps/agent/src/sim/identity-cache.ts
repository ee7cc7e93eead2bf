import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { decodePem } from '@svc/release-core';
import { writeFileAtomic } from '../journal/io.js';
import { IdentityArena } from './identity-arena.js';
import { SCALAR_BYTES } from './sim-key.js';

/**
 * The simulator's identity cache (`--identities FILE`): the devices enrolled by an earlier run,
 * so a run against the same server starts without enrolling again. Binary, 0600 (it holds
 * private keys):
 *
 *   "SVCSIMID" | u8 version (1) | u32 BE header length | header JSON
 *   then per device: u32 BE index | u8 tenant index | u16 BE certificate length | 32-byte P-256 scalar | certificate DER
 *
 * The header names what the identities are good for: the server address, the SHA-256 of the
 * server CA they were enrolled against, the device name prefix and the tenants. A cache made
 * against another server, CA or prefix is refused before anything is sent (IdentityCacheError
 * `IDENTITY_CACHE_MISMATCH`); one the server no longer recognises (another database or schema
 * behind the same CA, devices decommissioned) is refused by the first authenticated call the
 * simulator makes with it (main.ts), and new enrollments must come from the cached tenant.
 */
const MAGIC = Buffer.from('SVCSIMID');
const VERSION = 1;

export type IdentityCacheErrorCode = 'IDENTITY_CACHE_MISMATCH' | 'IDENTITY_CACHE_CORRUPT';

export class IdentityCacheError extends Error {
  constructor(
    readonly code: IdentityCacheErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface CacheHeader {
  server: string;
  server_ca_sha256: string;
  prefix: string;
  tenants: string[];
}

/** SHA-256 (hex) of the first certificate of a PEM bundle: what a cache is pinned to. */
export function serverCaFingerprint(serverCaPem: string): string {
  return createHash('sha256').update(decodePem(serverCaPem, 'CERTIFICATE')).digest('hex');
}

/**
 * Loads the cache into `arena` (devices with index < arena.capacity), after checking it was
 * made for `expect`. Returns the cached tenants, or undefined when the file does not exist.
 */
export async function loadIdentityCache(path: string, expect: Omit<CacheHeader, 'tenants'>, arena: IdentityArena): Promise<string[] | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const corrupt = (why: string) => new IdentityCacheError('IDENTITY_CACHE_CORRUPT', `--identities ${path}: not a simulator identity cache (${why})`);
  if (bytes.length < 13 || !bytes.subarray(0, 8).equals(MAGIC)) throw corrupt('no SVCSIMID header');
  if (bytes[8] !== VERSION) throw corrupt(`version ${bytes[8]}, this simulator reads ${VERSION}`);
  const headerEnd = 13 + bytes.readUInt32BE(9);
  if (headerEnd > bytes.length) throw corrupt('truncated header');
  let header: CacheHeader;
  try {
    header = JSON.parse(bytes.subarray(13, headerEnd).toString('utf8')) as CacheHeader;
  } catch {
    throw corrupt('header is not JSON');
  }
  const mismatch = (field: keyof CacheHeader, flag: string) =>
    new IdentityCacheError(
      'IDENTITY_CACHE_MISMATCH',
      `--identities ${path}: enrolled with ${flag} ${JSON.stringify(header[field])}, this run has ${JSON.stringify(expect[field as keyof typeof expect])}; ` +
        'use another file (or delete this one) to enroll afresh',
    );
  if (header.server_ca_sha256 !== expect.server_ca_sha256) throw mismatch('server_ca_sha256', '--server-ca (SHA-256)');
  if (header.server !== expect.server) throw mismatch('server', '--server');
  if (header.prefix !== expect.prefix) throw mismatch('prefix', '--prefix');
  if (!Array.isArray(header.tenants) || header.tenants.some((t) => typeof t !== 'string')) throw corrupt('tenants is not a list of strings');
  let at = headerEnd;
  while (at < bytes.length) {
    if (at + 7 + SCALAR_BYTES > bytes.length) throw corrupt(`truncated record at byte ${at}`);
    const index = bytes.readUInt32BE(at);
    const tenantIndex = bytes[at + 4]!;
    const tenant = header.tenants[tenantIndex];
    const certLength = bytes.readUInt16BE(at + 5);
    const scalarAt = at + 7;
    const certAt = scalarAt + SCALAR_BYTES;
    at = certAt + certLength;
    if (at > bytes.length) throw corrupt(`truncated certificate of device ${index}`);
    if (tenant === undefined) throw corrupt(`device ${index} names tenant ${tenantIndex} of ${header.tenants.length}`);
    if (index < arena.capacity) arena.set(index, bytes.subarray(scalarAt, certAt), bytes.subarray(certAt, at), tenant);
  }
  return header.tenants;
}

/** Writes every identity in `arena` (atomically, mode 0600). */
export async function saveIdentityCache(path: string, header: Omit<CacheHeader, 'tenants'>, arena: IdentityArena): Promise<void> {
  const head = Buffer.from(JSON.stringify({ ...header, tenants: arena.tenants } satisfies CacheHeader));
  const parts: Buffer[] = [MAGIC, Buffer.from([VERSION]), u32(head.length), head];
  for (let i = 0; i < arena.capacity; i++) {
    if (!arena.has(i)) continue;
    const cert = arena.certDer(i);
    const rec = Buffer.alloc(7);
    rec.writeUInt32BE(i, 0);
    rec[4] = arena.tenants.indexOf(arena.tenant(i));
    rec.writeUInt16BE(cert.length, 5);
    parts.push(rec, arena.scalar(i), cert);
  }
  await writeFileAtomic(path, Buffer.concat(parts));
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n, 0);
  return b;
}
