import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/store/migrate.js';
import { migrations } from '../../src/store/migrations/index.js';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';

describe.each(availableDrivers())('migrations on %s', (driver) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore(driver, { migrate: false });
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('applies every migration on a fresh schema, then re-running is a no-op', async () => {
    const applied = await migrateToLatest(t.store);
    expect(applied).toEqual(Object.keys(migrations));
    expect(await migrateToLatest(t.store)).toEqual([]);
    const tables = await sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = ${t.store.schema}`.execute(t.store.db);
    const names = tables.rows.map((r) => r.table_name);
    for (const table of ['tenants', 'users', 'devices', 'device_counts', 'audit_events', 'enroll_tokens']) {
      expect(names).toContain(table);
    }
  });

  it('migrations are forward only: names are ordered NNNN_name and each exports up() and no down()', () => {
    const names = Object.keys(migrations);
    expect([...names].sort()).toEqual(names);
    for (const [name, m] of Object.entries(migrations)) {
      expect(name).toMatch(/^\d{4}_[a-z0-9_]+$/);
      expect(typeof m.up).toBe('function');
      expect(m.down).toBeUndefined();
    }
  });

  it('isolates schemas: a second schema starts empty', async () => {
    const other = await createTestStore(driver, { shareWith: t, schema: `t_${randomBytes(6).toString('hex')}` });
    try {
      const count = await other.store.db
        .selectFrom('tenants')
        .select(sql<number>`count(*)::int`.as('n'))
        .executeTakeFirstOrThrow();
      expect(count.n).toBe(0);
    } finally {
      await other.dispose();
    }
  });

  it('two stores on one database keep their schemas apart under interleaved queries and transactions', async () => {
    const other = await createTestStore(driver, { shareWith: t });
    try {
      const stores = [t.store, other.store];
      await Promise.all(
        Array.from({ length: 40 }, (_, i) => {
          const s = stores[i % 2]!;
          const name = `tenant-${i % 2}-${i}`;
          return i % 4 < 2
            ? s.db.insertInto('tenants').values({ name, is_default: false }).execute()
            : s.db.transaction().execute(async (tx) => {
                await tx.insertInto('tenants').values({ name, is_default: false }).execute();
                await tx.selectFrom('tenants').select('id').execute();
              });
        }),
      );
      for (const [k, s] of stores.entries()) {
        const names = (await s.db.selectFrom('tenants').select('name').execute()).map((r) => r.name);
        expect(names.length).toBe(20);
        expect(names.every((n) => n.startsWith(`tenant-${k}-`))).toBe(true);
      }
    } finally {
      await other.dispose();
    }
  });
});
