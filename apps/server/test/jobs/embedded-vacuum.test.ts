import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedVacuum, vacuumDue, vacuumDueTables } from '../../src/jobs/embedded-vacuum.js';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

/**
 * PGlite has no autovacuum; the server's job does it (jobs/embedded-vacuum.ts). Real PGlite:
 * dead rows and an unset visibility map before, a clean index-only scan after.
 */
describe('embedded vacuum (PGlite)', () => {
  let t: TestStore;
  let tenant: string;
  const heapFetches = async () => {
    const plan = await sql<{
      'QUERY PLAN': string;
    }>`EXPLAIN (ANALYZE, COSTS OFF) SELECT name FROM devices WHERE tenant_id = ${tenant} ORDER BY name OFFSET 1000 LIMIT 10`.execute(t.store.db);
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('Index Only Scan');
    return Number(/Heap Fetches: (\d+)/.exec(text)![1]);
  };
  const deadRows = async () =>
    Number(
      (
        await sql<{ n: string }>`SELECT n_dead_tup::text AS n FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'devices'`.execute(
          t.store.db,
        )
      ).rows[0]!.n,
    );

  beforeAll(async () => {
    t = await createTestStore('pglite');
    tenant = await ensureDefaultTenant(t.store.db);
    await sql`INSERT INTO devices (tenant_id, name, status) SELECT ${tenant}::uuid, 'v-' || lpad(i::text, 5, '0'), 'online' FROM generate_series(1, 3000) AS i`.execute(
      t.store.db,
    );
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it('the thresholds are autovacuum defaults', () => {
    expect(vacuumDue({ live: 1000, dead: 250, modifiedSinceAnalyze: 0, insertedSinceVacuum: 0 })).toBe(false);
    expect(vacuumDue({ live: 1000, dead: 251, modifiedSinceAnalyze: 0, insertedSinceVacuum: 0 })).toBe(true);
    expect(vacuumDue({ live: 1000, dead: 0, modifiedSinceAnalyze: 151, insertedSinceVacuum: 0 })).toBe(true);
    expect(vacuumDue({ live: 1000, dead: 0, modifiedSinceAnalyze: 0, insertedSinceVacuum: 1201 })).toBe(true);
    expect(vacuumDue({ live: 1000, dead: 0, modifiedSinceAnalyze: 150, insertedSinceVacuum: 1200 })).toBe(false);
  });

  it('a mass status flip leaves dead rows and heap fetches; the due pass vacuums devices and clears both', async () => {
    await vacuumDueTables(t.store.db, { all: true });
    expect(await heapFetches()).toBe(0);
    await sql`UPDATE devices SET status = 'offline' WHERE tenant_id = ${tenant}`.execute(t.store.db);
    // Statistics reach pg_stat_user_tables at most once a second (PostgreSQL's flush interval).
    await sql`SELECT pg_stat_force_next_flush()`.execute(t.store.db);
    await expect.poll(deadRows, { timeout: 5000 }).toBeGreaterThanOrEqual(3000);
    expect(await heapFetches()).toBeGreaterThan(0);
    expect(await vacuumDueTables(t.store.db)).toContain('devices');
    await expect.poll(deadRows, { timeout: 5000 }).toBe(0);
    expect(await heapFetches()).toBe(0);
    // Nothing is due right after.
    expect(await vacuumDueTables(t.store.db)).not.toContain('devices');
  });

  it('the all pass (server start) covers every table; the periodic job then vacuums only what is due', async () => {
    expect(await vacuumDueTables(t.store.db, { all: true })).toEqual(expect.arrayContaining(['devices', 'device_counts', 'api_keys', 'tenants']));
    const passes: string[][] = [];
    const job = startEmbeddedVacuum(t.store.db, { intervalMs: 50, onVacuumed: (tables) => passes.push(tables) });
    try {
      await sql`UPDATE devices SET status = 'online' WHERE tenant_id = ${tenant}`.execute(t.store.db);
      await sql`SELECT pg_stat_force_next_flush()`.execute(t.store.db);
      await expect.poll(() => passes.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
      expect(passes[0]).toContain('devices');
      expect(passes[0]).not.toContain('tenants');
    } finally {
      await job.stop();
    }
  });
});
