/**
 * Typed errors of the signing repository. The server's one error table
 * (src/errors/) maps each code to an HTTP and a gRPC status; suggested mapping
 * in the trailing comment of each code.
 */
import { CodedError, codedErrorGuard } from '@svc/release-core';
export const SIGNING_REPO_ERROR_CODES = [
  'REPO_NOT_FOUND', // tenant has no repository (404 / NOT_FOUND)
  'METADATA_NOT_FOUND', // no such metadata file (404 / NOT_FOUND)
  'TARGET_NOT_FOUND', // no such target file (404 / NOT_FOUND)
  'TARGET_PATH_INVALID', // bad target path (400 / INVALID_ARGUMENT)
  'TARGET_INVALID', // bad digest, length or custom in a target entry (400 / INVALID_ARGUMENT)
  'TARGET_BLOB_MISSING', // the blob a target names is not stored, or has another length (409 / FAILED_PRECONDITION)
  'TARGET_IMMUTABLE', // an immutable publish would change an existing path's hashes (409 / ALREADY_EXISTS)
  'ROOT_KEY_UNAVAILABLE', // root key not on the server (exported and deleted) and none supplied (409 / FAILED_PRECONDITION)
  'ROOT_SIGNATURE_INSUFFICIENT', // supplied keys do not meet the current root threshold (400 / INVALID_ARGUMENT)
  'KEY_INVALID', // a supplied PEM is not an Ed25519 PKCS#8 private key (400 / INVALID_ARGUMENT)
  'KEY_MISMATCH', // a key file vanished while being created (500 / INTERNAL)
  'KEY_UNAVAILABLE', // an online key file is missing, unreadable or not the key root names (503 / UNAVAILABLE)
  'ROTATION_PENDING', // a prepared online key rotation waits for its signed root: accept or cancel it first (409 / FAILED_PRECONDITION)
  'ROTATION_NOT_FOUND', // no prepared online key rotation (404 / NOT_FOUND)
  'ROTATION_STALE', // a root was committed since the rotation was prepared: cancel and prepare again (409 / FAILED_PRECONDITION)
  'ROOT_INVALID', // a signed root is not TUF root metadata or not the prepared root N+1 (400 / INVALID_ARGUMENT)
] as const;

export type SigningRepoErrorCode = (typeof SIGNING_REPO_ERROR_CODES)[number];

export class SigningRepoError extends CodedError<SigningRepoErrorCode> {
  override readonly name = 'SigningRepoError';
}

export const isSigningRepoError = codedErrorGuard<SigningRepoError>(SigningRepoError);
