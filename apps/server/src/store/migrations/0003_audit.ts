import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Audit events, append-only in the database itself: a trigger raises on UPDATE, DELETE
 * and TRUNCATE, so no code path (ours or a future one) can rewrite the trail.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE audit_events (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigserial NOT NULL UNIQUE,
      tenant_id uuid NOT NULL,
      at timestamptz NOT NULL DEFAULT now(),
      actor text NOT NULL,
      credential text NOT NULL,
      action text NOT NULL,
      target text NOT NULL,
      request_id text,
      detail jsonb NOT NULL DEFAULT '{}'
    )`,
    `CREATE INDEX audit_events_tenant_seq ON audit_events (tenant_id, seq)`,
    `CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
     END $$`,
    `CREATE TRIGGER audit_events_no_update_delete BEFORE UPDATE OR DELETE ON audit_events
       FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()`,
    `CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
       FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()`,
  ]);
}
