import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Devices with incrementally kept counts (spec §8: `counts` over the whole tenant set,
 * never a scan per request), trigram search on names, history, log requests and
 * enrollment tokens. Trigger functions pin `search_path` to the schema they were
 * created in, so they work whatever the caller's path is.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE devices (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants(id),
      name text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
      status text NOT NULL DEFAULT 'offline' CHECK (status IN ('online', 'offline', 'decommissioned')),
      profile text,
      agent_version text,
      last_seen timestamptz,
      cert_fingerprint text,
      cert_not_after timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE UNIQUE INDEX devices_tenant_name ON devices (tenant_id, name)`,
    `CREATE INDEX devices_tenant_status_name ON devices (tenant_id, status, name)`,
    // The offline detector looks for online devices not seen for a while.
    `CREATE INDEX devices_online_last_seen ON devices (last_seen) WHERE status = 'online'`,
    // q: substring search served by a trigram index (pg_trgm lives in schema public).
    `CREATE INDEX devices_name_trgm ON devices USING gin (name public.gin_trgm_ops)`,
    `CREATE TABLE device_counts (
      tenant_id uuid NOT NULL,
      status text NOT NULL,
      n bigint NOT NULL,
      PRIMARY KEY (tenant_id, status)
    )`,
    `CREATE FUNCTION device_counts_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       INSERT INTO device_counts (tenant_id, status, n)
         SELECT tenant_id, status, count(*) FROM new_rows GROUP BY tenant_id, status
         ON CONFLICT (tenant_id, status) DO UPDATE SET n = device_counts.n + EXCLUDED.n;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION device_counts_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       UPDATE device_counts c SET n = c.n - d.k
         FROM (SELECT tenant_id, status, count(*) AS k FROM old_rows GROUP BY tenant_id, status) d
         WHERE c.tenant_id = d.tenant_id AND c.status = d.status;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION device_counts_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       UPDATE device_counts SET n = n - 1 WHERE tenant_id = OLD.tenant_id AND status = OLD.status;
       INSERT INTO device_counts (tenant_id, status, n) VALUES (NEW.tenant_id, NEW.status, 1)
         ON CONFLICT (tenant_id, status) DO UPDATE SET n = device_counts.n + 1;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER devices_counts_insert AFTER INSERT ON devices
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION device_counts_insert()`,
    `CREATE TRIGGER devices_counts_delete AFTER DELETE ON devices
       REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION device_counts_delete()`,
    // Row level and only on a real status change: heartbeats do not touch the counts row.
    `CREATE TRIGGER devices_counts_update AFTER UPDATE OF status, tenant_id ON devices
       FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
       EXECUTE FUNCTION device_counts_update()`,
    `CREATE TABLE device_history (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      at timestamptz NOT NULL DEFAULT now(),
      event text NOT NULL,
      detail jsonb NOT NULL DEFAULT '{}'
    )`,
    `CREATE INDEX device_history_device ON device_history (device_id, at)`,
    `CREATE TABLE log_requests (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL,
      device_id uuid NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'uploaded', 'failed')),
      requested_by text,
      created_at timestamptz NOT NULL DEFAULT now(),
      fulfilled_at timestamptz,
      content_type text,
      content bytea
    )`,
    `CREATE INDEX log_requests_device_status ON log_requests (device_id, status)`,
    `CREATE TABLE enroll_tokens (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants(id),
      name text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      prefix text NOT NULL,
      max_uses integer NOT NULL CHECK (max_uses > 0),
      uses integer NOT NULL DEFAULT 0,
      expires_at timestamptz NOT NULL,
      created_by text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX enroll_tokens_tenant ON enroll_tokens (tenant_id, created_at)`,
  ]);
}
