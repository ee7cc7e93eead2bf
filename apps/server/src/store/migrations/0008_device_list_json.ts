import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Each device row keeps the JSON text of its list item (spec §4/8 `GET /devices`), so a page
 * is 50 index-ordered rows glued with commas instead of 50 objects built per request.
 *
 * Why: the list is the hottest read (the console polls it, fleet scripts walk it). Building
 * the item per request (`row_to_json` plus two `to_char` for the RFC 3339 timestamps) cost
 * PostgreSQL more than the rest of the statement: pgbench, 50-row page, prepared: 6.1k/s
 * with per-request formatting, 24k/s without any item output. A stored generated column
 * moves that work to the write, which happens once per change (a heartbeat already
 * rewrites the row), not once per read.
 *
 * The text is exactly what fastify's serializer writes for the `Device` schema of
 * resources/devices/schemas.ts: the same keys in the same order, JSON string escaping from
 * PostgreSQL's own `to_json`, timestamps as `toISOString()` writes them (contracts
 * preamble: UTC, `Z`, milliseconds, truncated). devices-list.test.ts compares the bytes
 * with the single-device route and validates pages against the OpenAPI schema. A change
 * to the item's fields needs a new migration that redefines the function and the column.
 *
 * `device_list_json` is declared IMMUTABLE (a generated column requires it): it only
 * formats its arguments, `to_char` with purely numeric fields of a UTC timestamp depends on
 * no locale or session setting, and `to_json` of text is deterministic.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE FUNCTION device_list_json(p_name text, p_status text, p_profile text, p_agent_version text,
       p_last_seen timestamptz, p_cert_fingerprint text, p_created_at timestamptz)
     RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
       SELECT '{"name":' || to_json(p_name)::text
         || ',"status":' || to_json(p_status)::text
         || ',"profile":' || coalesce(to_json(p_profile)::text, 'null')
         || ',"agent_version":' || coalesce(to_json(p_agent_version)::text, 'null')
         || ',"last_seen":' || coalesce('"' || to_char(p_last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null')
         || ',"cert_fingerprint":' || coalesce(to_json(p_cert_fingerprint)::text, 'null')
         || ',"created_at":"' || to_char(p_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"}'
     $$`,
    `ALTER TABLE devices ADD COLUMN list_json text NOT NULL
       GENERATED ALWAYS AS (device_list_json(name, status, profile, agent_version, last_seen, cert_fingerprint, created_at)) STORED`,
  ]);
}
