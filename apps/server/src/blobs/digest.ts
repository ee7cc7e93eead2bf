import { BlobError } from './errors.js';

/** contracts §1: a digest string is `sha256:` + 64 lowercase hex. */
export type BlobDigest = `sha256:${string}`;

const DIGEST_RE = /^sha256:[0-9a-f]{64}$/;
const HEX_RE = /^[0-9a-f]{64}$/;

export function isBlobDigest(value: unknown): value is BlobDigest {
  return typeof value === 'string' && DIGEST_RE.test(value);
}

/** Narrows an untrusted value to a digest or throws BLOB_DIGEST_INVALID naming `field`. */
export function assertBlobDigest(value: unknown, field = 'digest'): BlobDigest {
  if (!isBlobDigest(value)) {
    // contracts §1: digest string is `sha256:` + 64 lowercase hex
    throw new BlobError('BLOB_DIGEST_INVALID', `${field} must be "sha256:" followed by 64 lowercase hex characters`);
  }
  return value;
}

/** The 64-hex part of a digest (TUF's own form inside metadata, contracts §1). */
export function digestHex(digest: BlobDigest): string {
  return digest.slice('sha256:'.length);
}

export function digestFromHex(hex: string, field = 'sha256'): BlobDigest {
  if (!HEX_RE.test(hex)) {
    throw new BlobError('BLOB_DIGEST_INVALID', `${field} must be 64 lowercase hex characters`);
  }
  return `sha256:${hex}`;
}
