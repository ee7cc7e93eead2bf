/**
 * Typed errors of the blob store. The server maps each code to one HTTP and one
 * gRPC status in its single error table (src/errors/); this file only names them.
 */
import { CodedError, codedErrorGuard } from '@svc/release-core';
export const BLOB_ERROR_CODES = [
  'BLOB_DIGEST_INVALID', // not `sha256:` + 64 lowercase hex
  'BLOB_NOT_FOUND', // no blob with that digest
  'BLOB_TOO_LARGE', // upload exceeded the caller's byte cap
  'BLOB_DIGEST_MISMATCH', // upload bytes did not hash to the digest the caller expected
  'BLOB_RANGE_INVALID', // malformed or unsatisfiable byte range
  'BLOB_WRITE_FAILED', // the stream, the filesystem or the database failed during put
] as const;

export type BlobErrorCode = (typeof BLOB_ERROR_CODES)[number];

export class BlobError extends CodedError<BlobErrorCode> {
  override readonly name = 'BlobError';
}

export const isBlobError = codedErrorGuard<BlobError>(BlobError);
