/**
 * Every refusal release-core can make, with a stable code. The server maps each code
 * to one HTTP and one gRPC status (apps/server/src/errors/table.ts); the CLI prints the
 * message on one line. Codes are never renamed: integrators match on them.
 */
export const RELEASE_ERROR_CODES = [
  // encodings and keys
  'CANONICALIZE_FAILED',
  'KEY_INVALID',
  'SIZE_LIMIT',
  // DSSE
  'ENVELOPE_MALFORMED',
  'PAYLOAD_TYPE_UNKNOWN',
  'SIGNATURES_EMPTY',
  'SIGNATURE_DUPLICATE_KEYID',
  'SIGNATURE_INVALID',
  'KEY_UNTRUSTED',
  'PAYLOAD_NOT_CANONICAL',
  // release rules
  'PAYLOAD_INVALID',
  'TENANT_MISMATCH',
  'PRODUCT_MISMATCH',
  'NOT_YET_VALID',
  'EXPIRED',
  'OFFLINE_AGE_EXCEEDED',
  'PROFILE_INCOMPATIBLE',
  'WAVES_INVALID',
  // certificates and receipts
  'CERT_INVALID',
  'CERT_UNTRUSTED',
  'CERT_EXPIRED',
  'CERT_IDENTITY_MISMATCH',
  'RECEIPT_INVALID',
  'RECEIPT_MISMATCH',
  // delivery reports beside receipts
  'DELIVERY_INVALID',
] as const;

export type ReleaseErrorCode = (typeof RELEASE_ERROR_CODES)[number];

/**
 * The one base of every error family with stable codes: ReleaseError here, and each app's own
 * (the server's ServerError, BlobError and SigningRepoError, the agent's AgentError, the CLI's
 * CliError), each with its codes in one `as const` list. `code` is what callers and
 * integrators match on; `message` is one human-readable line.
 */
export abstract class CodedError<C extends string = string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/**
 * The `is<Family>Error(e, code?)` guard of one error family: `e` is an instance of the family,
 * and of `code` when one is given. Each family exports its guard, `codedErrorGuard<Family>(Family)`
 * (the type argument keeps the family's codes: inferred from a generic class they would be lost).
 */
export function codedErrorGuard<E extends CodedError>(family: abstract new (...args: never[]) => E): (e: unknown, code?: E['code']) => e is E {
  return (e: unknown, code?: E['code']): e is E => e instanceof family && (code === undefined || e.code === code);
}

/** One bad field of a document: `path` like `components[1].kind`. */
export interface Issue {
  path: string;
  message: string;
}

export class ReleaseError<C extends ReleaseErrorCode = ReleaseErrorCode> extends CodedError<C> {
  override readonly name = 'ReleaseError';
  readonly issues: readonly Issue[];

  constructor(code: C, message: string, options: { cause?: unknown; issues?: readonly Issue[] } = {}) {
    super(code, message, options);
    this.issues = options.issues ?? [];
  }
}

export const isReleaseError = codedErrorGuard<ReleaseError>(ReleaseError);
