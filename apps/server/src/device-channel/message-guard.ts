import type { IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { ServerInterceptingCall, type Server, type ServerInterceptor, type ServiceDefinition } from '@grpc/grpc-js';
import { REFUSED_CAPACITY, type ConnectionAdmission } from './admission.js';
import { grpcHttp2Servers } from './connections.js';
import { oneLine } from '../errors/framework.js';
import { ServerError } from '../errors/server-error.js';
import { findTextProblem } from '../input-text.js';
import { toServiceError, type ChannelLogger } from './grpc-status.js';

/** A request message refused before any handler sees it. */
class RefusedMessage {
  constructor(readonly error: ServerError) {}
}

/**
 * Every request message of the device channel passes here, for every method and kind of
 * call (unary, server and client streaming), before a handler runs:
 * - bytes that are not the method's protobuf message: grpc-js would answer INTERNAL
 *   ("Error deserializing request"); here INVALID_ARGUMENT naming the message type;
 * - the input text rule of the HTTP API (input-text.ts) for every string field, nested
 *   ones included: no NUL or other control characters, no lone surrogates
 *   (INVALID_ARGUMENT naming the field as the .proto does, e.g. `inventory.profile`).
 * `guardedService` wraps a service definition's decoders so they never throw; the
 * interceptor answers a refused message with its status and keeps it from the handler.
 */
export function guardedService<S extends ServiceDefinition>(definition: S): S {
  const guarded: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition)) {
    const type = method.path.split('/').pop() ?? name;
    guarded[name] = { ...method, requestDeserialize: (bytes: Buffer) => decode(method.requestDeserialize, bytes, type) };
  }
  return guarded as S;
}

function decode(deserialize: (bytes: Buffer) => unknown, bytes: Buffer, method: string): unknown {
  let message: unknown;
  try {
    message = deserialize(bytes);
  } catch (e) {
    const why = e instanceof Error ? oneLine(e.message).slice(0, 120) : 'undecodable';
    return new RefusedMessage(new ServerError('INVALID_INPUT', `request: not a valid ${method} request message (${why})`));
  }
  const problem = findTextProblem(message, 'request');
  if (problem === undefined) return message;
  // ts-proto names fields in camelCase; the .proto, and every other refusal of the channel, in snake_case
  const [path = '', ...rest] = problem.split(': ');
  const field = path.replace(/^request\./, '').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return new RefusedMessage(new ServerError('INVALID_INPUT', [field, ...rest].join(': ')));
}

/** The metadata key that carries a framing header's refusal from the HTTP/2 stream to the interceptor. */
const REFUSED_FRAMING = 'svc-refused-framing';
/** gRPC over HTTP/2: TimeoutValue is 1 to 8 ASCII digits, TimeoutUnit one of H M S m u n. */
const GRPC_TIMEOUT = /^\d{1,8}[HMSmun]$/;

/**
 * Two request headers make grpc-js answer INTERNAL itself, before any interceptor or
 * handler: a compressed message it cannot inflate (`grpc-encoding: gzip` or `deflate` and
 * bytes that are no such stream) and a malformed `grpc-timeout`. The device channel takes
 * uncompressed messages only (receipts and log chunks are small or already compressed), so
 * any `grpc-encoding` other than `identity` is refused, as is a `grpc-timeout` outside the
 * protocol's grammar. The headers are inspected on the HTTP/2 stream before grpc-js reads
 * them: a refused one is removed and its refusal handed, as metadata, to the interceptor,
 * which answers INVALID_ARGUMENT naming the header before any message is read.
 */
export function refuseFramingHeaders(server: Server): void {
  // without the HTTP/2 servers the channel would answer INTERNAL to those headers
  for (const http2 of grpcHttp2Servers(server)) {
    http2.prependListener('stream', (_stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      delete headers[REFUSED_FRAMING];
      const problem = framingProblem(headers);
      if (problem === undefined) return;
      delete headers['grpc-encoding'];
      delete headers['grpc-timeout'];
      headers[REFUSED_FRAMING] = problem;
    });
  }
}

function framingProblem(headers: IncomingHttpHeaders): string | undefined {
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity') {
    return `grpc-encoding: ${JSON.stringify(oneLine(String(encoding)).slice(0, 40))} refused; the device channel takes uncompressed messages only`;
  }
  const timeout = headers['grpc-timeout'];
  if (timeout !== undefined && !GRPC_TIMEOUT.test(String(timeout))) {
    return `grpc-timeout: ${JSON.stringify(oneLine(String(timeout)).slice(0, 40))} is not 1 to 8 digits and a unit (H, M, S, m, u, n)`;
  }
  return undefined;
}

/**
 * Answers a refused message, a call whose framing headers were refused, or a call on a
 * connection beyond the cap (admission.ts), with its status (from the one error table) and
 * ends the call there.
 */
export function refusedMessageInterceptor(log: ChannelLogger, admission?: ConnectionAdmission): ServerInterceptor {
  return (_method, call) => {
    let refused = false;
    const refuse = (error: ServerError) => {
      if (refused) return;
      refused = true;
      const status = toServiceError(error, log);
      call.sendStatus({ code: status.code!, details: status.details!, metadata: status.metadata ?? null });
    };
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const framing = metadata.get(REFUSED_FRAMING)[0];
            if (admission !== undefined && metadata.get(REFUSED_CAPACITY).length > 0) refuse(admission.refusal());
            else if (framing !== undefined) refuse(new ServerError('INVALID_INPUT', String(framing)));
            else nextMetadata(metadata);
          },
          onReceiveMessage: (message, nextMessage) => {
            if (message instanceof RefusedMessage) {
              refuse(message.error);
              return;
            }
            if (!refused) nextMessage(message);
          },
          onReceiveHalfClose: (nextHalfClose) => {
            if (!refused) nextHalfClose();
          },
        }),
    });
  };
}
