import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Device channel: one device CA per tenant (the certificate in the database so every server
 * process agrees; the key is a file under SVC_DATA_DIR/ca/<tenant>/) and an append-only log
 * of every device certificate issued.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE device_cas (
      tenant_id uuid PRIMARY KEY REFERENCES tenants(id),
      cert_der bytea NOT NULL,
      key_file text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE device_certificates (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants(id),
      device_name text NOT NULL,
      serial text NOT NULL,
      fingerprint text NOT NULL,
      not_after timestamptz NOT NULL,
      reason text NOT NULL CHECK (reason IN ('enroll', 'renew')),
      issued_at timestamptz NOT NULL
    )`,
    `CREATE INDEX device_certificates_device ON device_certificates (tenant_id, device_name, issued_at)`,
  ]);
}
