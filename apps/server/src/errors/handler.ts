import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { mappingFor } from './table.js';
import { BlobError } from '../blobs/errors.js';
import { SigningRepoError } from '../signing-repo/errors.js';
import { ServerError } from './server-error.js';

/**
 * Turns anything thrown by a route into `{"error": "<one line>"}` with the status from
 * the ONE table. Validation errors name the field; fastify's own parse and size errors
 * become 400s, never 500s; internal errors never leak their message.
 */
export function toHttpError(error: unknown): { status: number; body: { error: string } } {
  const classified = classify(error);
  const { http } = mappingFor(classified.code);
  return { status: http, body: { error: http >= 500 ? 'internal error' : classified.message } };
}

function classify(error: unknown): { code: string; message: string } {
  if (error instanceof ServerError) return { code: error.code, message: error.message };
  if (error instanceof SigningRepoError || error instanceof BlobError) return { code: error.code, message: `${error.code}: ${oneLine(error.message)}` };
  const e = error as Partial<FastifyError> & { validation?: { instancePath?: string; message?: string; params?: Record<string, unknown> }[]; validationContext?: string; name?: string; issues?: { path: string; message: string }[] };
  if (e?.name === 'ReleaseError' && typeof e.code === 'string') {
    const issues = e.issues && e.issues.length > 0 ? `: ${e.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}` : '';
    // The stable code leads, so a refusal (400 like malformed input) is told apart by callers.
    return { code: e.code, message: `${e.code}: ${oneLine(String(e.message))}${issues}` };
  }
  if (Array.isArray(e?.validation)) return { code: 'INVALID_INPUT', message: validationMessage(e.validationContext, e.validation) };
  switch (e?.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'MALFORMED_JSON', message: 'body: malformed JSON' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'BODY_TOO_LARGE', message: 'body: request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'UNSUPPORTED_MEDIA_TYPE', message: `body: ${oneLine(String(e.message))}` };
  }
  if (e?.statusCode === 400 && typeof e.message === 'string') return { code: 'INVALID_INPUT', message: oneLine(e.message) };
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

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toHttpError(error);
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  void reply.code(status).send(body);
}
