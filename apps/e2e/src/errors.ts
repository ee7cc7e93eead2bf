/** Stable codes of the harness's own failures. */
export type E2eErrorCode =
  /** A process exited before it was ready, or exited with an unexpected status. */
  | 'PROCESS_EXITED'
  /** A bounded wait ran out. */
  | 'TIMEOUT'
  /** The REST API answered an unexpected status. */
  | 'HTTP_STATUS'
  /** A document (tar, JSON) from the service was malformed. */
  | 'MALFORMED';

export class E2eError extends Error {
  override readonly name = 'E2eError';
  constructor(
    readonly code: E2eErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
