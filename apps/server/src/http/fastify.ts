import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { clientErrorHandler, errorHandler } from '../errors/handler.js';
import { ServerError } from '../errors/server-error.js';
import { assertText } from '../input-text.js';
import { validatorCompiler } from './validator.js';
import { SERVER_LIMITS } from '../limits.js';

/**
 * The fastify instance every HTTP surface of the server is built on (buildApp, and the
 * tests of a single plugin, so they validate exactly as `dist/main.js` does). Input rules
 * live here, once, not in route handlers:
 * - the validator compiler (http/validator.ts): strict conversion of path and query values;
 * - one text rule for every path value, query value and JSON string (and key) before
 *   validation (input-text.ts): no NUL or other control characters, no lone surrogates;
 * - a text body is read as UTF-8, so a `charset` other than utf-8 is refused, and a JSON
 *   body whose bytes are not UTF-8 is malformed JSON;
 * - every error, including the router's, multipart's and Node's HTTP parser's, is answered
 *   `{"error": "<one line>"}` with the status of errors/table.ts.
 */
export function newFastify(options: { logger?: boolean | Record<string, unknown>; bodyLimit?: number } = {}): FastifyInstance {
  const app = Fastify({
    logger: options.logger ?? false,
    ...(options.bodyLimit !== undefined ? { bodyLimit: options.bodyLimit } : {}),
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // fastify's defaults, stated: JSON `__proto__` and `constructor.prototype` are refused
    // (400), a path parameter is at most 100 characters (414 URI_TOO_LONG).
    routerOptions: { maxParamLength: SERVER_LIMITS.pathParamChars },
    frameworkErrors: (error, request, reply) => errorHandler(error, request, reply),
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    // the path is the caller's: echoed on one line and cut, never a second copy of a 16 KiB request line
    void reply.code(404).send({ error: `route not found: ${request.method} ${path.length > 200 ? `${path.slice(0, 200)}...` : path}` });
  });
  app.addHook('preParsing', async (request) => assertUtf8(request));
  // fastify's JSON parser (same __proto__ / constructor.prototype refusals), over strict
  // UTF-8: bytes that are not UTF-8 are refused instead of read as U+FFFD
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = STRICT_UTF8.decode(body as Buffer);
    } catch {
      done(new ServerError('MALFORMED_JSON', 'body: not valid UTF-8'), undefined);
      return;
    }
    void parseJson(request, text, done);
  });
  app.addHook('preValidation', async (request) => {
    assertText(request.params, 'params');
    assertText(request.query, 'querystring');
    assertText(request.body, 'body');
  });
  return app;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

/** Text bodies (JSON, SBOM documents, multipart fields) are read as UTF-8 and nothing else. */
function assertUtf8(request: FastifyRequest): void {
  const type = request.headers['content-type'];
  const charset = type === undefined ? undefined : CHARSET.exec(type)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ServerError(
      'UNSUPPORTED_MEDIA_TYPE',
      `content-type: charset ${JSON.stringify(charset.slice(0, 40))} is not supported (bodies are read as utf-8)`,
    );
  }
}
