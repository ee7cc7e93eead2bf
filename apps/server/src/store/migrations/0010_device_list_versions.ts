import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * A per-tenant version of the ORDERED device list: bumped, in the changing transaction,
 * whenever a device is added or removed or changes status or name, so the set and order of
 * every `GET /devices` filter (status, q on name) can only have changed if the version did.
 * Heartbeats (status unchanged) do not bump it.
 *
 * Why: spec §8 pages by offset, and skipping 50k rows walks 50k index entries per request.
 * The server keeps, per process, the name at every 1000th position of a list together with
 * the version it was read at (resources/devices/anchors.ts), so a deep page walks at most 999
 * entries; the page statement reads the version in its own snapshot and the anchors are
 * used only when it still matches, which makes a stale anchor impossible to serve. Another
 * process's change bumps the version like a local one: nothing is shared in memory.
 *
 * Statement-level triggers with transition tables, like the counts (0002, 0007): one
 * upsert per tenant per statement, in tenant order (no deadlock between two statements).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE device_list_versions (
      tenant_id uuid PRIMARY KEY REFERENCES tenants(id),
      version bigint NOT NULL
    )`,
    `CREATE FUNCTION device_list_bump(p_tenants uuid[]) RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
       INSERT INTO device_list_versions (tenant_id, version)
         SELECT t, 1 FROM unnest(p_tenants) AS t ORDER BY t
         ON CONFLICT (tenant_id) DO UPDATE SET version = device_list_versions.version + 1
     $$`,
    `CREATE FUNCTION device_list_version_insert_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       IF TG_OP = 'INSERT' THEN
         PERFORM device_list_bump(ARRAY(SELECT DISTINCT tenant_id FROM new_rows));
       ELSE
         PERFORM device_list_bump(ARRAY(SELECT DISTINCT tenant_id FROM old_rows));
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE FUNCTION device_list_version_update() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM device_list_bump(ARRAY(
         SELECT DISTINCT t FROM old_rows o JOIN new_rows n ON n.id = o.id,
           LATERAL (VALUES (o.tenant_id), (n.tenant_id)) AS v(t)
         WHERE o.status IS DISTINCT FROM n.status OR o.name IS DISTINCT FROM n.name OR o.tenant_id IS DISTINCT FROM n.tenant_id));
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER devices_list_version_insert AFTER INSERT ON devices
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION device_list_version_insert_delete()`,
    `CREATE TRIGGER devices_list_version_delete AFTER DELETE ON devices
       REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION device_list_version_insert_delete()`,
    `CREATE TRIGGER devices_list_version_update AFTER UPDATE ON devices
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION device_list_version_update()`,
  ]);
}
