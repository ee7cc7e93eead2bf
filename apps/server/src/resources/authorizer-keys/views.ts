/** The JSON shape of an authorizer key (routes/v1/authorizer-keys.ts `AuthorizerKey`). */
import type { AuthorizerKeyRow } from './queries.js';

export interface AuthorizerKeyView {
  id: string;
  name: string;
  keyid: string;
  public_key_pem: string;
  created_at: string;
  revoked_at: string | null;
  status: 'active' | 'revoked';
}

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
