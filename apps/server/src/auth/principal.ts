import type { FastifyRequest } from 'fastify';
import { ServerError } from '../errors/server-error.js';
import type { Permission, Role } from './permissions.js';

/** Who is calling, resolved once per request by the auth hook (`request.principal`). */
export interface Principal {
  kind: 'session' | 'api-key';
  tenantId: string;
  role: Role;
  permissions: ReadonlySet<Permission>;
  /** Human-readable actor for audit events: the user's email or `api-key:<name>`. */
  actor: string;
  userId: string | null;
  email: string | null;
  sessionId: string | null;
  apiKeyId: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook for every non-public route; null on public ones. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** Required on every route (checked at registration): a permission or `'public'`. */
    permission?: import('./permissions.js').RoutePermission;
    /** spec §5 rule 3: true for session-only routes (creating users, managing API keys). */
    sessionOnly?: boolean;
    /** One-line summary for the OpenAPI document. */
    summary?: string;
  }
}

/** The caller of a route that requires a credential (never null there). */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new ServerError('UNAUTHENTICATED', 'authentication required: session cookie or Authorization: Bearer <API key>');
  return request.principal;
}
