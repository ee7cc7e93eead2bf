import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/** Tenants, users, sessions, API keys and report branding. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE tenants (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text NOT NULL,
      is_default boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    // At most one default tenant, even when two processes start at once.
    `CREATE UNIQUE INDEX tenants_one_default ON tenants (is_default) WHERE is_default`,
    `CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants(id),
      email text NOT NULL,
      display_name text NOT NULL DEFAULT '',
      role text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
      password_hash text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    // Login looks a user up by email alone, so an email is unique service-wide.
    `CREATE UNIQUE INDEX users_email ON users (lower(email))`,
    `CREATE INDEX users_tenant ON users (tenant_id, email)`,
    `CREATE TABLE sessions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants(id),
      user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`,
    `CREATE TABLE api_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants(id),
      name text NOT NULL,
      role text NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
      prefix text NOT NULL,
      key_hash text NOT NULL UNIQUE,
      created_by uuid REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz
    )`,
    `CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at)`,
    `CREATE TABLE branding (
      tenant_id uuid PRIMARY KEY REFERENCES tenants(id),
      company_name text NOT NULL,
      primary_color text NOT NULL,
      accent_color text NOT NULL,
      logo_data_url text,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
  ]);
}
