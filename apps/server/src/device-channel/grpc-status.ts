import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { mappingFor } from '../errors/table.js';

export interface ChannelLogger {
  error(obj: object, msg: string): void;
  warn?(obj: object, msg: string): void;
}

/**
 * Any thrown value -> a grpc ServiceError through the server's ONE error table
 * (src/errors/table.ts): ServerError, ReleaseError and pipeline errors carry a `code`, and
 * the table gives the gRPC status. The code travels in the `svc-error-code` trailer so an
 * agent can branch on it without parsing the message; a refusal that says when to come back
 * carries `retry-after-ms` too. Unknown failures are INTERNAL with a
 * generic message (details go to the log, never to the device).
 */
export function toServiceError(err: unknown, log?: ChannelLogger): Partial<ServiceError> {
  const code = typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : undefined;
  const metadata = new Metadata();
  // A request stream that ended early (the device went away, or the call was already answered
  // with a refusal, see message-guard.ts): nothing failed here and nobody waits for the status.
  if (code === 'ERR_STREAM_PREMATURE_CLOSE') return { code: status.CANCELLED, details: 'cancelled', metadata };
  const mapping = mappingFor(code);
  if (mapping.grpc === 'INTERNAL') {
    log?.error({ err }, 'device channel call failed');
    metadata.set('svc-error-code', 'INTERNAL');
    return { code: status.INTERNAL, details: 'internal error', metadata };
  }
  metadata.set('svc-error-code', code ?? 'INTERNAL');
  // DEVICE_CHANNEL_BUSY: how long the device waits before it connects again (admission.ts)
  const retryAfterMs = (err as { retryAfterMs?: unknown }).retryAfterMs;
  if (typeof retryAfterMs === 'number') metadata.set('retry-after-ms', String(retryAfterMs));
  const message = err instanceof Error ? err.message : String(err);
  return { code: status[mapping.grpc], details: message.split('\n')[0] ?? message, metadata };
}
