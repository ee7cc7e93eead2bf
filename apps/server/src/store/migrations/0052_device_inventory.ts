import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Device inventory, tags, dynamic groups and bulk actions (docs/inventory.md).
 *
 * - `devices.inventory`: what the agent last reported, `{"attributes": {..}, "custom": {..},
 *   "members": [..]}`, replaced as a whole by a report. A GIN index (`jsonb_path_ops`) serves
 *   the filter language's equality on an attribute (`inventory @> '{"attributes":{"k":"v"}}'`).
 *   A heartbeat that changes no attribute leaves the column alone, so it stays a HOT update
 *   (migration 0035).
 * - `devices.tags`: the operator's tags; GIN on the array serves `tags has "eu"`.
 * - `svc_version_key(text)`: the order of `<`, `<=`, `>`, `>=` in the filter language: each
 *   dot-separated run of 1-20 digits padded to 20, other parts as they are, compared in byte
 *   order (`COLLATE "C"`), so "2.10.0" > "2.4.0" and "1500" > "900". IMMUTABLE: it formats its
 *   argument only.
 * - `device_groups.filter`: a dynamic group's filter (NULL for a static group); its members
 *   are materialized into `device_group_members` when it is created or refreshed, and under
 *   the group lock when a rollout starts (the snapshot the release's signature covers).
 * - `device_bulk_jobs` and `device_bulk_job_devices`: an action over a filtered selection,
 *   run by the bulk-action job (leased, so one process runs a job), with each device's outcome.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE devices ADD COLUMN inventory jsonb NOT NULL DEFAULT '{}'::jsonb`,
    `ALTER TABLE devices ADD COLUMN tags text[] NOT NULL DEFAULT '{}'`,
    `CREATE INDEX devices_inventory ON devices USING gin (inventory jsonb_path_ops)`,
    `CREATE INDEX devices_tags ON devices USING gin (tags)`,
    `CREATE FUNCTION svc_version_key(v text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
       SELECT string_agg(CASE WHEN p ~ '^[0-9]{1,20}$' THEN lpad(p, 20, '0') ELSE p END, '.' ORDER BY i)
       FROM unnest(string_to_array(v, '.')) WITH ORDINALITY AS t(p, i)
     $$`,
    `ALTER TABLE device_groups ADD COLUMN filter text`,
    `CREATE TABLE device_bulk_jobs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      action text NOT NULL CHECK (action IN ('group.add', 'group.remove', 'tag', 'untag', 'decommission')),
      filter text NOT NULL,
      params jsonb NOT NULL DEFAULT '{}'::jsonb,
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),
      total integer NOT NULL DEFAULT 0,
      succeeded integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      actor text NOT NULL,
      credential text NOT NULL,
      error text,
      lease_owner text,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      finished_at timestamptz
    )`,
    `CREATE INDEX device_bulk_jobs_tenant ON device_bulk_jobs (tenant_id, created_at DESC)`,
    `CREATE INDEX device_bulk_jobs_open ON device_bulk_jobs (created_at) WHERE state IN ('queued', 'running')`,
    `CREATE TABLE device_bulk_job_devices (
      job_id uuid NOT NULL REFERENCES device_bulk_jobs (id),
      device_name text NOT NULL,
      outcome text NOT NULL DEFAULT 'pending' CHECK (outcome IN ('pending', 'succeeded', 'unchanged', 'failed')),
      detail text,
      at timestamptz,
      PRIMARY KEY (job_id, device_name)
    )`,
  ]);
}
