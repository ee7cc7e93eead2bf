import { SERVER_LIMITS } from '../limits.js';
import type { ServerErrorCode } from './server-error.js';

/**
 * The errors fastify, its router and @fastify/multipart raise for a request they refuse
 * before (or while) a route runs, by their `code`, as the server's own codes: every one is
 * answered `{"error": "<one line>"}` with the status of errors/table.ts, never fastify's
 * default body. Another fastify code with a 4xx `statusCode`, or any error marked 400, is
 * INVALID_INPUT; anything else is left to the caller (an internal error).
 */
const FRAMEWORK_CODES: Record<string, { code: ServerErrorCode; message: (e: FrameworkError) => string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'MALFORMED_JSON', message: () => 'body: malformed JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'MALFORMED_JSON', message: () => 'body: malformed JSON' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'BODY_TOO_LARGE', message: () => 'body: request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: (e) => `body: ${e.message}` },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'UNSUPPORTED_MEDIA_TYPE', message: (e) => `body: ${e.message}` },
  // router: a percent-encoding that does not decode, a path parameter over maxParamLength
  FST_ERR_BAD_URL: { code: 'INVALID_INPUT', message: () => 'path: not a valid percent-encoded URL path' },
  FST_ERR_MAX_PARAM_LENGTH: { code: 'URI_TOO_LONG', message: () => `path: a path parameter is longer than ${SERVER_LIMITS.pathParamChars} characters` },
  // @fastify/multipart: the route's limits on files, fields and parts (413 there too)
  FST_FILES_LIMIT: { code: 'MULTIPART_LIMIT', message: () => 'body: more files than the route accepts' },
  FST_FIELDS_LIMIT: { code: 'MULTIPART_LIMIT', message: () => 'body: more fields than the route accepts' },
  FST_PARTS_LIMIT: { code: 'MULTIPART_LIMIT', message: () => 'body: more parts than the route accepts' },
  FST_REQ_FILE_TOO_LARGE: { code: 'MULTIPART_LIMIT', message: () => 'body: a file is larger than the route accepts' },
  FST_INVALID_MULTIPART_CONTENT_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: () => 'body: must be multipart/form-data' },
  FST_PROTO_VIOLATION: { code: 'MALFORMED_MULTIPART', message: () => 'body: a multipart field name is a prototype property' },
  FST_INVALID_JSON_FIELD_ERROR: { code: 'MALFORMED_MULTIPART', message: () => 'body: a multipart field declared as JSON is not valid JSON' },
  FST_MP_PREMATURE_CLOSE: { code: 'MALFORMED_MULTIPART', message: () => 'body: the request ended before the multipart body did' },
};

interface FrameworkError {
  code: string;
  message: string;
  statusCode?: number;
}

export function frameworkError(error: unknown): { code: ServerErrorCode; message: string } | undefined {
  const e = error as Partial<FrameworkError> | null | undefined;
  const known = typeof e?.code === 'string' && Object.hasOwn(FRAMEWORK_CODES, e.code) ? FRAMEWORK_CODES[e.code] : undefined;
  if (known !== undefined) return { code: known.code, message: oneLine(known.message(e as FrameworkError)) };
  const fastify = typeof e?.code === 'string' && e.code.startsWith('FST_') && typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500;
  if ((fastify || e?.statusCode === 400) && typeof e?.message === 'string') return { code: 'INVALID_INPUT', message: oneLine(e.message) };
  return undefined;
}

/** A request Node's HTTP parser refuses (fastify's `clientErrorHandler` answers it). */
export function clientError(error: { code?: string }): { code: ServerErrorCode; message: string } {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { code: 'REQUEST_TIMEOUT', message: 'request: not received in time' };
  if (error.code === 'HPE_HEADER_OVERFLOW') return { code: 'HEADERS_TOO_LARGE', message: 'request: request line and headers are larger than 16 KiB' };
  return { code: 'MALFORMED_REQUEST', message: 'request: not a valid HTTP/1.1 request' };
}

export function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
