import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { missingPermission, ServerError } from '../errors/server-error.js';
import { findLiveApiKey, touchApiKey } from '../resources/api-keys/queries.js';
import type { Database } from '../store/database.js';
import type { ApiKeyCache } from './api-key-cache.js';
import { findLiveSession } from '../resources/sessions/queries.js';
import { isRole, permissionsOf, type RoutePermission } from './permissions.js';
import type { Principal } from './principal.js';
import { hashSecret, plausibleSecret } from './secrets.js';

export const SESSION_COOKIE = 'svc_session';
/** The header a cookie-authenticated write must carry (`x-svc-csrf: 1`), beyond SameSite=Strict. */
export const CSRF_HEADER = 'x-svc-csrf';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Resolves the credential of a request (spec §5 rule 1): `Authorization: Bearer <API key>` or
 * the session cookie. One indexed lookup each; API keys found are remembered by `apiKeys`
 * (cleared across processes by database notifications, auth/api-key-cache.ts), sessions are
 * read every time. Missing or unknown credential: 401.
 */
export async function resolvePrincipal(db: Kysely<Database>, request: FastifyRequest, now: Date, apiKeys?: ApiKeyCache): Promise<Principal> {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer ([^\s]+)$/.exec(header);
    if (!match || !plausibleSecret(match[1]!)) throw new ServerError('UNAUTHENTICATED', 'authorization: expected "Bearer <API key>"');
    const keyHash = hashSecret(match[1]!);
    let key = apiKeys?.lookup(keyHash);
    if (key === undefined) {
      const generation = apiKeys?.begin() ?? 0;
      key = await findLiveApiKey(db, keyHash);
      if (key !== undefined) apiKeys?.remember(keyHash, key, generation);
    }
    if (!key || !isRole(key.role)) throw new ServerError('UNAUTHENTICATED', 'authorization: unknown or revoked API key');
    if (key.last_used_at === null || now.getTime() - key.last_used_at.getTime() > 60_000) {
      await touchApiKey(db, key.id, now);
      key.last_used_at = now; // the cached record too: the next touch is a minute away
    }
    return {
      kind: 'api-key',
      tenantId: key.tenant_id,
      role: key.role,
      permissions: permissionsOf(key.role),
      actor: `api-key:${key.name}`,
      userId: null,
      email: null,
      sessionId: null,
      apiKeyId: key.id,
    };
  }
  const token = request.cookies?.[SESSION_COOKIE];
  if (token === undefined || token === '') {
    throw new ServerError('UNAUTHENTICATED', 'authentication required: session cookie or Authorization: Bearer <API key>');
  }
  const session = plausibleSecret(token) ? await findLiveSession(db, hashSecret(token), now) : undefined;
  if (!session || !isRole(session.role)) throw new ServerError('UNAUTHENTICATED', 'session: expired, revoked or unknown; log in again');
  return {
    kind: 'session',
    tenantId: session.tenant_id,
    role: session.role,
    permissions: permissionsOf(session.role),
    actor: session.email,
    userId: session.user_id,
    email: session.email,
    sessionId: session.session_id,
    apiKeyId: null,
  };
}

/** spec §5 rule 4-5.6: 403 names the missing permission; session-only routes refuse API keys. */
export function authorize(principal: Principal, permission: RoutePermission, sessionOnly: boolean): void {
  if (permission === 'public') return;
  if (!principal.permissions.has(permission)) throw missingPermission(permission);
  // spec §5 rule 3: an API key cannot mint keys or users.
  if (sessionOnly && principal.kind !== 'session') throw missingPermission(permission, 'session credential required');
}

/**
 * A state-changing request authenticated by the session cookie must carry `x-svc-csrf: 1`.
 * A cross-site page cannot set a custom header without a CORS preflight, which this server
 * never grants, so a forged form or fetch from another origin is refused even where a browser
 * sends the cookie despite SameSite=Strict (an old browser, a sibling subdomain). API keys
 * are not sent by browsers on their own: their writes are exempt.
 */
export function checkCsrf(principal: Principal, method: string, header: string | string[] | undefined): void {
  if (principal.kind !== 'session' || SAFE_METHODS.has(method)) return;
  if (header !== '1') throw new ServerError('PERMISSION_DENIED', `csrf: a write with the session cookie needs the header ${CSRF_HEADER}: 1`);
}
