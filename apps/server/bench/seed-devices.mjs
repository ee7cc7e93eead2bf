// Seeds `n` devices of one tenant with one server-side statement, then VACUUM ANALYZE as
// autovacuum (or the embedded vacuum job) would within a minute of such a bulk insert: it sets
// the visibility map, without which every index-only scan (offset skips, q counts) visits the
// heap for each row and the planner avoids the trigram index. Shared by the benches that need
// a big fleet (bench/devices.mjs, apps/console/bench/device-page.mjs).
import { sql } from 'kysely';

/** Names dev-0000001.., a third offline, one in a hundred decommissioned. Returns the seed time in ms. */
export async function seedDevices(db, tenantId, n) {
  const t0 = performance.now();
  await sql`INSERT INTO devices (tenant_id, name, status, profile, agent_version, last_seen)
    SELECT ${tenantId}::uuid, 'dev-' || lpad(i::text, 7, '0'),
      CASE WHEN i % 100 = 0 THEN 'decommissioned' WHEN i % 3 = 0 THEN 'offline' ELSE 'online' END,
      'linux-arm64', '1.0.' || (i % 7), now()
    FROM generate_series(1, ${n}::int) AS i`.execute(db);
  const ms = performance.now() - t0;
  await sql`VACUUM ANALYZE devices`.execute(db);
  return ms;
}
