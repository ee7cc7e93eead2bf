/**
 * The one API client: openapi-fetch typed by the types generated from the server's OpenAPI
 * document (api/__generated__/schema.ts). Same origin, so the httpOnly session cookie is the
 * credential; every state-changing call carries the CSRF header the API requires.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './__generated__/schema';

export type { components, paths };

export const CSRF_HEADER = 'x-svc-csrf';
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** An API answer that was not a success, with the server's one-line `error` in words. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (!SAFE.has(request.method)) request.headers.set(CSRF_HEADER, '1');
    return request;
  },
};

export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
api.use(csrf);

/** The headers a hand-built request (the artifact upload with progress) needs for a write. */
export const writeHeaders = (): Record<string, string> => ({ [CSRF_HEADER]: '1' });

/** Turns an openapi-fetch result into its data, or throws ApiError with the server's words. */
export async function ok<T>(pending: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await pending;
  if (response.ok) return data as T;
  throw new ApiError(response.status, describe(response.status, error));
}

export function describe(status: number, error: unknown): string {
  const line = typeof error === 'object' && error !== null && 'error' in error ? String(error.error) : undefined;
  if (line) return line;
  if (status === 401) return 'not logged in';
  if (status === 403) return 'not allowed';
  if (status === 404) return 'not found';
  return `the server answered ${status}`;
}

/** Updates answer 204 unless asked for the representation (RFC 7240); ask when the body is needed. */
export const RETURN_REPRESENTATION = { Prefer: 'return=representation' } as const;

export type Schema<P extends keyof paths, M extends keyof paths[P], S extends number = 200> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

/** The query parameters of a path's GET, as the generated types declare them. */
export type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;

type RawMethod = 'post' | 'put';
type RawOperation<P extends keyof paths, M extends RawMethod> = paths[P][M] extends { requestBody?: { content: object } } ? paths[P][M] : never;
/** Paths whose `M` operation takes a body. */
type RawPath<M extends RawMethod> = { [P in keyof paths]: RawOperation<P, M> extends never ? never : P }[keyof paths];
/** The media types the API declares for that body. */
type MediaType<P extends keyof paths, M extends RawMethod> = keyof NonNullable<RawOperation<P, M>['requestBody']>['content'] & string;
type Params<P extends keyof paths, M extends RawMethod> = RawOperation<P, M> extends { parameters: infer X } ? Pick<X, ('path' | 'query') & keyof X> : never;
/** The JSON body of the operation's success answer (200 or 201; `undefined` when it has none). */
type Answer<P extends keyof paths, M extends RawMethod> = RawOperation<P, M>['responses'] extends infer R
  ? R extends { 200: { content: { 'application/json': infer B } } }
    ? B
    : R extends { 201: { content: { 'application/json': infer B } } }
      ? B
      : undefined
  : never;

/**
 * A write whose body is a file, a multipart form or a document in its own media type rather
 * than JSON: the bytes are sent as they are (a `File` streamed by the browser, never read here),
 * with `mediaType` as the content type (left out for `FormData`, whose boundary the browser
 * sets). It goes through the typed client, so it carries the session cookie and the CSRF header,
 * and a refusal throws the same `ApiError`, in the server's words, as every other call.
 */
export function rawWrite<M extends RawMethod, P extends RawPath<M>>(
  method: M,
  path: P,
  init: { params: Params<P, M>; body: Blob | FormData | string; mediaType?: MediaType<P, M> },
): Promise<Answer<P, M>> {
  const headers: Record<string, string> = init.mediaType === undefined || init.body instanceof FormData ? {} : { 'content-type': init.mediaType };
  // the generated body types describe the document's JSON; here the body is sent unserialised
  const request = api.request as unknown as (
    method: M,
    path: P,
    init: { params?: object; body: unknown; headers: Record<string, string>; bodySerializer: (body: unknown) => unknown },
  ) => Promise<{ data?: Answer<P, M>; error?: unknown; response: Response }>;
  return ok(request(method, path, { params: init.params, body: init.body, headers, bodySerializer: (body) => body }));
}
