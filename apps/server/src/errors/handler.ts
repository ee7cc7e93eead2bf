import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { mappingFor } from './table.js';
import { BlobError } from '../blobs/errors.js';
import { SigningRepoError } from '../signing-repo/errors.js';
import { clientError, frameworkError, oneLine } from './framework.js';
import { ServerError } from './server-error.js';
import { SERVER_TUNING } from '../limits.js';

/**
 * Turns anything thrown by a route into `{"error": "<one line>"}` with the status from
 * the ONE table. Validation errors name the field; fastify's, its router's and multipart's
 * own refusals keep their 4xx (errors/framework.ts); internal errors never leak their message,
 * while a 503 (KEY_UNAVAILABLE) names what is unavailable so an operator can act on it.
 */
export function toHttpError(error: unknown): { status: number; body: { error: string } } {
  const classified = classify(error);
  const { http, grpc } = mappingFor(classified.code);
  // spec §7: the error is one line; a caller's value with a line break in it is shown escaped.
  // An internal failure's message stays in the log; a 503 says what is unavailable.
  const hidden = http === 500 || grpc === 'INTERNAL';
  return { status: http, body: { error: hidden ? 'internal error' : classified.message.replace(/[\r\n]/g, (c) => (c === '\n' ? '\\n' : '\\r')) } };
}

function classify(error: unknown): { code: string; message: string } {
  if (error instanceof ServerError) return { code: error.code as string, message: error.message };
  // The blob store wraps whatever its source stream threw; when that source is the caller's
  // upload and the server already classified its failure (a malformed multipart body), that is the answer.
  if (error instanceof BlobError && error.code === 'BLOB_WRITE_FAILED' && error.cause instanceof ServerError) return classify(error.cause);
  if (error instanceof SigningRepoError || error instanceof BlobError) return { code: error.code, message: `${error.code}: ${oneLine(error.message)}` };
  const e = error as Partial<FastifyError> & {
    validation?: { instancePath?: string; message?: string; params?: Record<string, unknown> }[];
    validationContext?: string;
    name?: string;
    issues?: { path: string; message: string }[];
  };
  if (e?.name === 'ReleaseError' && typeof e.code === 'string') {
    const issues = e.issues && e.issues.length > 0 ? `: ${e.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}` : '';
    // The stable code leads, so a refusal (400 like malformed input) is told apart by callers.
    return { code: e.code, message: `${e.code}: ${oneLine(String(e.message))}${issues}` };
  }
  if (Array.isArray(e?.validation)) return { code: 'INVALID_INPUT', message: validationMessage(e.validationContext, e.validation) };
  const framework = frameworkError(error);
  if (framework !== undefined) return framework;
  return { code: 'INTERNAL', message: 'internal error' };
}

function validationMessage(part: string | undefined, issues: NonNullable<ReturnType<typeof Object>>[]): string {
  const first = issues[0] as { instancePath?: string; message?: string; params?: Record<string, unknown>; keyword?: string } | undefined;
  const base = part ?? 'body';
  if (!first) return `${base}: invalid`;
  const path = (first.instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
  // Unknown fields (additionalProperties false): name the offending property itself.
  const extra = first.params?.additionalProperty ?? first.params?.additionalProperties;
  if (first.keyword === 'additionalProperties' || extra !== undefined) {
    const name = Array.isArray(extra) ? extra.join(', ') : String(extra ?? '');
    return `${base}${path ? `.${path}` : ''}${name ? `.${name}` : ''}: unknown field`;
  }
  const missing = first.params?.requiredProperties ?? first.params?.missingProperty;
  if (first.keyword === 'required' && missing !== undefined) {
    const name = Array.isArray(missing) ? missing.join(', ') : String(missing);
    return `${base}${path ? `.${path}` : ''}.${name}: is required`;
  }
  // TypeBox reports a property forbidden by additionalProperties: false as "schema is false".
  if (first.message === 'schema is false') return `${base}${path ? `.${path}` : ''}: unknown field`;
  return `${base}${path ? `.${path}` : ''}: ${oneLine(first.message ?? 'invalid')}`;
}

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toHttpError(error);
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  void reply.code(status).send(body);
}

/**
 * fastify's `clientErrorHandler`: a request Node's HTTP parser refuses never reaches a
 * route, so the answer is written to the socket as Node does, in the `{"error"}` shape.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // a socket already answered: the parser reports again on the bytes drained below
  if (error.code === 'ECONNRESET' || socket.destroyed || lingering.has(socket)) return;
  const { code, message } = clientError(error);
  const status = mappingFor(code).http;
  const body = JSON.stringify({ error: message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  // end after the answer and drop what the client is still sending, for a bounded time: a
  // socket closed with unread bytes is reset by the kernel, and the client may lose the answer
  lingering.add(socket);
  const timer = setTimeout(() => socket.destroy(), SERVER_TUNING.clientErrorLingerMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.on('data', () => undefined);
  socket.end();
  socket.resume();
}

/** Sockets answered by clientErrorHandler and draining until they close. */
const lingering = new WeakSet<Socket>();
