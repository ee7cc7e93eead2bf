/** An authorizer key row as the API shows it (schemas.ts `AuthorizerKey`). */
import type { AuthorizerKeyRow } from './queries.js';
import type { AuthorizerKeyView } from './schemas.js';

export function authorizerKeyView(r: AuthorizerKeyRow): AuthorizerKeyView {
  return {
    id: r.id,
    name: r.name,
    keyid: r.keyid,
    public_key_pem: r.public_key_pem,
    created_at: r.created_at.toISOString(),
    revoked_at: r.revoked_at ? r.revoked_at.toISOString() : null,
    status: r.revoked_at ? 'revoked' : 'active',
  };
}
