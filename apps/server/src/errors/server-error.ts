/**
 * Every refusal the server itself makes, with a stable code. Each code maps to one HTTP
 * and one gRPC status in `table.ts` (checked against docs/errors.md by a test). Codes are
 * never renamed: integrators match on them. To add one: add it here, in `table.ts` and in
 * docs/errors.md.
 */
import { CodedError, codedErrorGuard } from '@svc/release-core';
export const SERVER_ERROR_CODES = [
  'INVALID_INPUT',
  'MALFORMED_JSON',
  'BODY_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'MALFORMED_MULTIPART',
  'MULTIPART_LIMIT',
  'URI_TOO_LONG',
  'HEADERS_TOO_LARGE',
  'MALFORMED_REQUEST',
  'REQUEST_TIMEOUT',
  'UNAUTHENTICATED',
  'INVALID_CREDENTIALS',
  'PERMISSION_DENIED',
  'NOT_FOUND', // 404 unknown or other tenant's resource
  'CONFLICT',
  'ENROLL_TOKEN_INVALID',
  'ENROLL_TOKEN_EXPIRED',
  'ENROLL_TOKEN_EXHAUSTED',
  'LOG_NOT_READY',
  'KEY_UNAVAILABLE', // 503 a key the request needs (TUF online key, device CA key, evidence key) is missing, unreadable or not the recorded one (docs/server.md)
  'DEVICE_CHANNEL_BUSY', // 503 the device port holds its maximum of connections; the gRPC answer carries retry-after-ms
  // publish and deploy
  'ARTIFACT_INVALID', // 400 bad multipart field (name, version, kind, media_type, file)
  'ARTIFACT_EXISTS', // 409 name + version already published
  'ARTIFACT_IMMUTABLE', // 400 PATCH tried to change name/version/digest
  'ARTIFACT_TOO_LARGE', // 400 upload over the size cap
  'SBOM_INVALID', // 400 not a CycloneDX 1.4-1.6 / SPDX 2.3 JSON document the official schemas accept, or over a cap
  'REGISTRY_INVALID', // 400 bad registry URL or repository/tag
  'REGISTRY_UNREACHABLE', // 400 the registry answered an error or did not answer
  'GROUP_INVALID', // 400 bad group field or unknown member device
  'GROUP_EXISTS', // 409 group name taken
  'GROUP_IN_USE', // 409 group targeted by a running rollout (cannot be deleted)
  'AUTHORIZER_KEY_INVALID', // 400 not an Ed25519 SPKI PEM
  'AUTHORIZER_KEY_EXISTS', // 409 key already registered
  'RELEASE_INVALID', // 400 bad release submission body (envelope not an object, expected_product pattern)
  'RELEASE_PREREQUISITE', // 400 component artifact / target group missing or different (spec §4 prerequisites)
  'RELEASE_CONFLICT', // 409 product + version already published with another envelope
  'GROUP_CHANGED', // 409 group snapshot digest no longer equals rollout.target_policy_digest
  'DEVICE_INCOMPATIBLE', // 409 a group member's profile is not in compatibility.profiles
  'ROLLOUT_INVALID', // 400 bad rollout request or signed rollout policy (health, recovery)
  'WAVES_INVALID', // 400 malformed waves or failure threshold
  'OVERRIDE_LOOSENS', // 400 a start-time override would loosen the signed constraints
  'ROLLOUT_STATE', // 409 approve/resume/abort not possible in the current state
  'RECEIPT_UNEXPECTED', // 409 receipt names a rollout/transaction the device is not assigned to
  // Article 14 cases (docs/article-14.md)
  'CASE_INVALID', // 400 bad case field (awareness in the future, unknown linked artifact, group or device...)
  'CASE_STATE', // 409 the change is not possible in the case's state (assess a closed case, close without a final report)
  'SUBMISSION_INVALID', // 400 a stage submission's content misses a required field or has a bad one
  'SUBMISSION_SUPERSEDED', // 409 the submission named in supersedes_id is already superseded
  'ATTACHMENT_INVALID', // 400 bad multipart field (file, description)
  'ATTACHMENT_TYPE', // 400 content type not on the allowlist, or the bytes are not of the declared type
  'ATTACHMENT_TOO_LARGE', // 413 file over the per-file cap, or the case's attachments over the total cap
  'ATTACHMENT_LIMIT', // 400 the case already has the maximum number of attachments
  'ATTACHMENT_REDACTED', // 410 the attachment was redacted: its bytes are no longer served
  'TRANSPORT_UNAVAILABLE', // 400 the filing asks for a transport the server has not configured
  'TRANSPORT_FAILED', // 400 the transport did not accept the document (webhook error or timeout); nothing recorded
  'INTERNAL',
  // vulnerability intelligence
  'FEED_INVALID', // 400 not an OSV archive or KEV catalog the server reads (unsafe entry name, malformed, unknown format)
  'FEED_TOO_LARGE', // 400 feed over a size, entry-count or expansion cap (zip bomb)
  'VEX_INVALID', // 400 not a CycloneDX VEX or OpenVEX document the schemas accept
] as const;

export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number];

/** `message` is the one human-readable line sent as `{"error": message}`. */
export class ServerError<C extends ServerErrorCode = ServerErrorCode> extends CodedError<C> {
  override readonly name = 'ServerError';
}

export const isServerError = codedErrorGuard<ServerError>(ServerError);

/** 400 naming the field: `invalidInput('limit', 'must be a non-negative integer')`. */
export function invalidInput(field: string, problem: string): ServerError<'INVALID_INPUT'> {
  return new ServerError('INVALID_INPUT', `${field}: ${problem}`);
}

/** 404 for a missing resource or one of another tenant (indistinguishable on purpose). */
export function notFound(what: string): ServerError<'NOT_FOUND'> {
  return new ServerError('NOT_FOUND', `${what} not found`);
}

/** 403 in the spec's form `missing permission: <name>` (spec §7). */
export function missingPermission(permission: string, why?: string): ServerError<'PERMISSION_DENIED'> {
  return new ServerError('PERMISSION_DENIED', `missing permission: ${permission}${why ? ` (${why})` : ''}`);
}
