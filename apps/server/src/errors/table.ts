import type { ReleaseErrorCode } from '@svc/release-core';
import type { BlobErrorCode } from '../blobs/errors.js';
import type { SigningRepoErrorCode } from '../signing-repo/errors.js';
import { SERVER_ERROR_CODES, type ServerErrorCode } from './server-error.js';

/** gRPC status names as in @grpc/grpc-js `status` (look the number up there). */
export type GrpcStatusName =
  | 'OK'
  | 'INVALID_ARGUMENT'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'RESOURCE_EXHAUSTED'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'INTERNAL';

export interface ErrorMapping {
  http: number;
  grpc: GrpcStatusName;
}

/**
 * Server codes, every @svc/release-core ReleaseError code, and the signing repository's and
 * blob store's codes: the Record type keeps the table total.
 */
export type MappedErrorCode = ServerErrorCode | ReleaseErrorCode | SigningRepoErrorCode | BlobErrorCode;

/**
 * THE one table: every error code the server can answer with -> HTTP status and gRPC
 * status. docs/errors.md lists exactly the same rows (test/errors/errors-doc.test.ts).
 * Release refusals are 400 with a reason a person can act on: spec §7 leaves their status
 * open and the release-pipeline issue fixes it at 400 (the `error` string starts with the
 * stable code, so a refusal stays distinguishable from malformed input); conflicts are 409.
 */
export const ERROR_TABLE: Record<MappedErrorCode, ErrorMapping> = {
  INVALID_INPUT: { http: 400, grpc: 'INVALID_ARGUMENT' },
  MALFORMED_JSON: { http: 400, grpc: 'INVALID_ARGUMENT' },
  BODY_TOO_LARGE: { http: 400, grpc: 'RESOURCE_EXHAUSTED' },
  UNSUPPORTED_MEDIA_TYPE: { http: 400, grpc: 'INVALID_ARGUMENT' },
  MALFORMED_MULTIPART: { http: 400, grpc: 'INVALID_ARGUMENT' },
  MULTIPART_LIMIT: { http: 413, grpc: 'RESOURCE_EXHAUSTED' },
  URI_TOO_LONG: { http: 414, grpc: 'INVALID_ARGUMENT' },
  HEADERS_TOO_LARGE: { http: 431, grpc: 'RESOURCE_EXHAUSTED' },
  MALFORMED_REQUEST: { http: 400, grpc: 'INVALID_ARGUMENT' },
  REQUEST_TIMEOUT: { http: 408, grpc: 'DEADLINE_EXCEEDED' },
  UNAUTHENTICATED: { http: 401, grpc: 'UNAUTHENTICATED' },
  INVALID_CREDENTIALS: { http: 401, grpc: 'UNAUTHENTICATED' },
  PERMISSION_DENIED: { http: 403, grpc: 'PERMISSION_DENIED' },
  NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  CONFLICT: { http: 409, grpc: 'ALREADY_EXISTS' },
  ENROLL_TOKEN_INVALID: { http: 401, grpc: 'UNAUTHENTICATED' },
  ENROLL_TOKEN_EXPIRED: { http: 401, grpc: 'UNAUTHENTICATED' },
  ENROLL_TOKEN_EXHAUSTED: { http: 401, grpc: 'UNAUTHENTICATED' },
  LOG_NOT_READY: { http: 409, grpc: 'FAILED_PRECONDITION' },
  KEY_UNAVAILABLE: { http: 503, grpc: 'UNAVAILABLE' },
  DEVICE_CHANNEL_BUSY: { http: 503, grpc: 'RESOURCE_EXHAUSTED' },
  INTERNAL: { http: 500, grpc: 'INTERNAL' },
  // publish-and-deploy pipeline (docs/publish-and-deploy.md)
  ARTIFACT_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  ARTIFACT_EXISTS: { http: 409, grpc: 'ALREADY_EXISTS' },
  ARTIFACT_IMMUTABLE: { http: 400, grpc: 'INVALID_ARGUMENT' },
  ARTIFACT_TOO_LARGE: { http: 400, grpc: 'RESOURCE_EXHAUSTED' },
  SBOM_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  REGISTRY_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  REGISTRY_UNREACHABLE: { http: 400, grpc: 'UNAVAILABLE' },
  GROUP_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  GROUP_EXISTS: { http: 409, grpc: 'ALREADY_EXISTS' },
  GROUP_IN_USE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  AUTHORIZER_KEY_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  AUTHORIZER_KEY_EXISTS: { http: 409, grpc: 'ALREADY_EXISTS' },
  RELEASE_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  RELEASE_PREREQUISITE: { http: 400, grpc: 'FAILED_PRECONDITION' },
  RELEASE_CONFLICT: { http: 409, grpc: 'ALREADY_EXISTS' },
  GROUP_CHANGED: { http: 409, grpc: 'FAILED_PRECONDITION' },
  DEVICE_INCOMPATIBLE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  ROLLOUT_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  WAVES_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  OVERRIDE_LOOSENS: { http: 400, grpc: 'INVALID_ARGUMENT' },
  ROLLOUT_STATE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  RECEIPT_UNEXPECTED: { http: 409, grpc: 'FAILED_PRECONDITION' },
  // Article 14 cases (docs/article-14.md)
  CASE_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  CASE_STATE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  SUBMISSION_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  SUBMISSION_SUPERSEDED: { http: 409, grpc: 'FAILED_PRECONDITION' },
  ATTACHMENT_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  ATTACHMENT_TYPE: { http: 400, grpc: 'INVALID_ARGUMENT' },
  ATTACHMENT_TOO_LARGE: { http: 413, grpc: 'RESOURCE_EXHAUSTED' },
  ATTACHMENT_LIMIT: { http: 400, grpc: 'RESOURCE_EXHAUSTED' },
  ATTACHMENT_REDACTED: { http: 410, grpc: 'NOT_FOUND' },
  TRANSPORT_UNAVAILABLE: { http: 400, grpc: 'FAILED_PRECONDITION' },
  TRANSPORT_FAILED: { http: 400, grpc: 'UNAVAILABLE' },
  // vulnerability intelligence (docs/vulnerabilities.md)
  FEED_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  FEED_TOO_LARGE: { http: 400, grpc: 'RESOURCE_EXHAUSTED' },
  VEX_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },

  CANONICALIZE_FAILED: { http: 400, grpc: 'INVALID_ARGUMENT' },
  KEY_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  SIZE_LIMIT: { http: 400, grpc: 'RESOURCE_EXHAUSTED' },
  ENVELOPE_MALFORMED: { http: 400, grpc: 'INVALID_ARGUMENT' },
  PAYLOAD_TYPE_UNKNOWN: { http: 400, grpc: 'INVALID_ARGUMENT' },
  SIGNATURES_EMPTY: { http: 400, grpc: 'INVALID_ARGUMENT' },
  SIGNATURE_DUPLICATE_KEYID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  SIGNATURE_INVALID: { http: 400, grpc: 'PERMISSION_DENIED' },
  KEY_UNTRUSTED: { http: 400, grpc: 'PERMISSION_DENIED' },
  PAYLOAD_NOT_CANONICAL: { http: 400, grpc: 'INVALID_ARGUMENT' },
  PAYLOAD_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  TENANT_MISMATCH: { http: 400, grpc: 'PERMISSION_DENIED' },
  PRODUCT_MISMATCH: { http: 400, grpc: 'PERMISSION_DENIED' },
  NOT_YET_VALID: { http: 400, grpc: 'FAILED_PRECONDITION' },
  EXPIRED: { http: 400, grpc: 'FAILED_PRECONDITION' },
  OFFLINE_AGE_EXCEEDED: { http: 400, grpc: 'FAILED_PRECONDITION' },
  PROFILE_INCOMPATIBLE: { http: 400, grpc: 'FAILED_PRECONDITION' },
  CERT_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  CERT_UNTRUSTED: { http: 400, grpc: 'UNAUTHENTICATED' },
  CERT_EXPIRED: { http: 400, grpc: 'UNAUTHENTICATED' },
  CERT_IDENTITY_MISMATCH: { http: 400, grpc: 'PERMISSION_DENIED' },
  RECEIPT_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  RECEIPT_MISMATCH: { http: 400, grpc: 'FAILED_PRECONDITION' },
  DELIVERY_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  // signing repository (KEY_INVALID is shared with release-core above: a bad PEM either way)
  REPO_NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  METADATA_NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  TARGET_NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  TARGET_PATH_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  TARGET_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  TARGET_BLOB_MISSING: { http: 409, grpc: 'FAILED_PRECONDITION' },
  TARGET_IMMUTABLE: { http: 409, grpc: 'ALREADY_EXISTS' },
  ROOT_KEY_UNAVAILABLE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  ROOT_SIGNATURE_INSUFFICIENT: { http: 400, grpc: 'INVALID_ARGUMENT' },
  KEY_MISMATCH: { http: 500, grpc: 'INTERNAL' },
  ROTATION_PENDING: { http: 409, grpc: 'FAILED_PRECONDITION' },
  ROTATION_NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  ROTATION_STALE: { http: 409, grpc: 'FAILED_PRECONDITION' },
  ROOT_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  // blob store
  BLOB_DIGEST_INVALID: { http: 400, grpc: 'INVALID_ARGUMENT' },
  BLOB_NOT_FOUND: { http: 404, grpc: 'NOT_FOUND' },
  BLOB_TOO_LARGE: { http: 413, grpc: 'RESOURCE_EXHAUSTED' },
  BLOB_DIGEST_MISMATCH: { http: 400, grpc: 'INVALID_ARGUMENT' },
  BLOB_RANGE_INVALID: { http: 416, grpc: 'INVALID_ARGUMENT' },
  BLOB_WRITE_FAILED: { http: 500, grpc: 'INTERNAL' },
};

export const ALL_SERVER_CODES: readonly ServerErrorCode[] = SERVER_ERROR_CODES;

/** Status for any thrown value carrying a known `code`; unknown codes are 500/INTERNAL. */
export function mappingFor(code: string | undefined): ErrorMapping {
  return (code !== undefined && Object.hasOwn(ERROR_TABLE, code) ? ERROR_TABLE[code as MappedErrorCode] : undefined) ?? ERROR_TABLE.INTERNAL;
}
