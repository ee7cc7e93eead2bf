import { isDigest, type Digest } from '@svc/release-core';
import { BlobError } from './errors.js';

/** Narrows an untrusted value to a digest (contracts §1) or throws BLOB_DIGEST_INVALID naming `field`. */
export function assertBlobDigest(value: unknown, field = 'digest'): Digest {
  if (!isDigest(value)) {
    throw new BlobError('BLOB_DIGEST_INVALID', `${field} must be "sha256:" followed by 64 lowercase hex characters`);
  }
  return value;
}
