/**
 * Refusals the publish-and-deploy pipeline makes on its own (release-core refusals keep their
 * ReleaseError codes). They are server error codes: each is listed in errors/server-error.ts and
 * mapped to one HTTP and one gRPC status in errors/table.ts (docs/errors.md lists the same).
 */
import { ServerError } from '../errors/server-error.js';

export const PIPELINE_ERROR_CODES = [
  'ARTIFACT_INVALID', // 400 bad multipart field (name, version, kind, media_type, file)
  'ARTIFACT_EXISTS', // 409 name + version already published
  'ARTIFACT_IMMUTABLE', // 400 PATCH tried to change name/version/digest
  'ARTIFACT_TOO_LARGE', // 400 upload over the size cap
  'SBOM_INVALID', // 400 not a CycloneDX/SPDX JSON document with the minimal fields
  'REGISTRY_INVALID', // 400 bad registry URL or repository/tag
  'REGISTRY_UNREACHABLE', // 400 the registry answered an error or did not answer
  'GROUP_INVALID', // 400 bad group field or unknown member device
  'GROUP_EXISTS', // 409 group name taken
  'AUTHORIZER_KEY_INVALID', // 400 not an Ed25519 SPKI PEM
  'AUTHORIZER_KEY_EXISTS', // 409 key already registered
  'RELEASE_INVALID', // 400 bad release submission body (envelope not an object, expected_product pattern)
  'RELEASE_PREREQUISITE', // 400 component artifact / target group missing or different (spec 4 prerequisites)
  'RELEASE_CONFLICT', // 409 product + version already published with another envelope
  'GROUP_CHANGED', // 409 group snapshot digest no longer equals rollout.target_policy_digest
  'DEVICE_INCOMPATIBLE', // 409 a group member's profile is not in compatibility.profiles
  'ROLLOUT_INVALID', // 400 bad rollout request or signed rollout policy (health, recovery)
  'WAVES_INVALID', // 400 malformed waves or failure threshold
  'OVERRIDE_LOOSENS', // 400 a start-time override would loosen the signed constraints
  'ROLLOUT_STATE', // 409 approve/resume/abort not possible in the current state
  'RECEIPT_UNEXPECTED', // 409 receipt names a rollout/transaction the device is not assigned to
  'NOT_FOUND', // 404 unknown or other tenant's resource
] as const;

export type PipelineErrorCode = (typeof PIPELINE_ERROR_CODES)[number];

export class PipelineError extends ServerError<PipelineErrorCode> {}
