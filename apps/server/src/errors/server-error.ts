/**
 * Every refusal the server itself makes, with a stable code. Each code maps to one HTTP
 * and one gRPC status in `table.ts` (checked against docs/errors.md by a test). Codes are
 * never renamed: integrators match on them. To add one: add it here, in `table.ts` and in
 * docs/errors.md.
 */
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
  'NOT_FOUND',
  'CONFLICT',
  'ENROLL_TOKEN_INVALID',
  'ENROLL_TOKEN_EXPIRED',
  'ENROLL_TOKEN_EXHAUSTED',
  'LOG_NOT_READY',
  // publish-and-deploy pipeline (src/pipeline/errors.ts)
  'ARTIFACT_INVALID',
  'ARTIFACT_EXISTS',
  'ARTIFACT_IMMUTABLE',
  'ARTIFACT_TOO_LARGE',
  'SBOM_INVALID',
  'REGISTRY_INVALID',
  'REGISTRY_UNREACHABLE',
  'GROUP_INVALID',
  'GROUP_EXISTS',
  'AUTHORIZER_KEY_INVALID',
  'AUTHORIZER_KEY_EXISTS',
  'RELEASE_INVALID',
  'RELEASE_PREREQUISITE',
  'RELEASE_CONFLICT',
  'GROUP_CHANGED',
  'DEVICE_INCOMPATIBLE',
  'ROLLOUT_INVALID',
  'WAVES_INVALID',
  'OVERRIDE_LOOSENS',
  'ROLLOUT_STATE',
  'RECEIPT_UNEXPECTED',
  'INTERNAL',
] as const;

export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number];

export class ServerError<C extends ServerErrorCode = ServerErrorCode> extends Error {
  override readonly name = 'ServerError';
  readonly code: C;

  /** `message` is the one human-readable line sent as `{"error": message}`. */
  constructor(code: C, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

export function isServerError(e: unknown, code?: ServerErrorCode): e is ServerError {
  return e instanceof ServerError && (code === undefined || e.code === code);
}

/** 400 naming the field: `invalidInput('limit', 'must be a non-negative integer')`. */
export function invalidInput(field: string, problem: string): ServerError<'INVALID_INPUT'> {
  return new ServerError('INVALID_INPUT', `${field}: ${problem}`);
}

/** 404 for a missing resource or one of another tenant (indistinguishable on purpose). */
export function notFound(what: string): ServerError<'NOT_FOUND'> {
  return new ServerError('NOT_FOUND', `${what} not found`);
}

/** 403 in the spec's form `missing permission: <name>` (spec 7). */
export function missingPermission(permission: string, why?: string): ServerError<'PERMISSION_DENIED'> {
  return new ServerError('PERMISSION_DENIED', `missing permission: ${permission}${why ? ` (${why})` : ''}`);
}
