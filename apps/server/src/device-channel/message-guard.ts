import { ServerInterceptingCall, type ServerInterceptor, type ServiceDefinition } from '@grpc/grpc-js';
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

/** Answers a refused message with its status (from the one error table) and ends the call there. */
export function refusedMessageInterceptor(log: ChannelLogger): ServerInterceptor {
  return (_method, call) => {
    let refused = false;
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message, nextMessage) => {
            if (message instanceof RefusedMessage) {
              if (!refused) {
                refused = true;
                const status = toServiceError(message.error, log);
                call.sendStatus({ code: status.code!, details: status.details!, metadata: status.metadata ?? null });
              }
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
