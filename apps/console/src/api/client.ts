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

/** The headers a hand-built request (upload with progress, raw body) needs for a write. */
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
