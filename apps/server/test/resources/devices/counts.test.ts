import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markStaleDevicesOffline } from '../../../src/resources/devices/queries/presence.js';
import { deviceCounts } from '../../../src/resources/devices/queries/list.js';
import { ensureDefaultTenant } from '../../../src/resources/tenants/queries.js';
import { openStore } from '../../../src/store/open.js';
import { availableDrivers, createTestStore, type TestStore } from '../../helpers/store.js';

/**
 * spec §8 `counts` kept by triggers (0002 insert/delete, 0007 update per statement). The
 * mass flip is the offline detector after an outage: with 0002's row trigger it was
 * quadratic in the number of flipped devices (20k: ~25 s on PostgreSQL, minutes for 66k).
 */
describe.each(availableDrivers())('device counts triggers on %s', (driver) => {
  let t: TestStore;
  let tenant: string;
  let other: string;
  const counts = () => deviceCounts(t.store.db, tenant);

  beforeAll(async () => {
    t = await createTestStore(driver);
    tenant = await ensureDefaultTenant(t.store.db);
    other = (await t.store.db.insertInto('tenants').values({ name: 'other', is_default: false }).returning('id').executeTakeFirstOrThrow()).id;
    // 20k online devices seen long ago, 1k offline, one statement.
    await sql`INSERT INTO devices (tenant_id, name, status, last_seen)
      SELECT ${tenant}::uuid, 'dev-' || lpad(i::text, 6, '0'), CASE WHEN i <= 20000 THEN 'online' ELSE 'offline' END, '2020-01-01T00:00:00Z'::timestamptz
      FROM generate_series(1, 21000) AS i`.execute(t.store.db);
    await t.store.db
      .insertInto('devices')
      .values({ tenant_id: other, name: 'o-1', status: 'online', last_seen: new Date('2020-01-01T00:00:00Z') })
      .execute();
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it('starts from the insert trigger', async () => {
    expect(await counts()).toEqual({ online: 20000, offline: 1000, decommissioned: 0 });
  });

  it('an update that changes no status (heartbeat) leaves the counts rows untouched', async () => {
    const before = await sql<{ xmin: string }>`SELECT xmin::text FROM device_counts WHERE tenant_id = ${tenant} ORDER BY status`.execute(t.store.db);
    await sql`UPDATE devices SET last_seen = last_seen + interval '1 second', status = status WHERE tenant_id = ${tenant} AND name < 'dev-000100'`.execute(
      t.store.db,
    );
    const after = await sql<{ xmin: string }>`SELECT xmin::text FROM device_counts WHERE tenant_id = ${tenant} ORDER BY status`.execute(t.store.db);
    expect(after.rows).toEqual(before.rows);
    expect(await counts()).toEqual({ online: 20000, offline: 1000, decommissioned: 0 });
  });

  it('one statement flipping both ways nets per status', async () => {
    // 500 online -> offline and 300 offline -> online in ONE statement.
    await sql`UPDATE devices SET status = CASE WHEN status = 'online' THEN 'offline' ELSE 'online' END
      WHERE tenant_id = ${tenant} AND (name <= 'dev-000500' OR name > 'dev-020700')`.execute(t.store.db);
    expect(await counts()).toEqual({ online: 19800, offline: 1200, decommissioned: 0 });
    await sql`UPDATE devices SET status = CASE WHEN status = 'online' THEN 'offline' ELSE 'online' END
      WHERE tenant_id = ${tenant} AND (name <= 'dev-000500' OR name > 'dev-020700')`.execute(t.store.db);
    expect(await counts()).toEqual({ online: 20000, offline: 1000, decommissioned: 0 });
  });

  it('the offline detector flips 20k devices of one tenant in statements of 1,000; the counts follow per statement', async () => {
    // Linear time comes from the UPDATE trigger running once per statement (migration 0007):
    // the per-row trigger of 0002 made this flip quadratic (~25 s on PostgreSQL). The speed
    // itself is a benchmark's business, not a timed test's.
    const triggers = await sql<{
      per_row: boolean;
    }>`SELECT (tgtype & 1) = 1 AS per_row FROM pg_trigger WHERE tgrelid = 'devices'::regclass AND tgname = 'devices_counts_update'`.execute(t.store.db);
    expect(triggers.rows).toEqual([{ per_row: false }]);
    const flipped = await markStaleDevicesOffline(t.store.db, new Date('2021-01-01T00:00:00Z'));
    expect(flipped).toBe(20001);
    expect(await counts()).toEqual({ online: 0, offline: 21000, decommissioned: 0 });
    expect(await deviceCounts(t.store.db, other)).toEqual({ online: 0, offline: 1, decommissioned: 0 });
  }, 60_000);

  it.runIf(driver === 'postgres')('the offline detector skips a device a concurrent heartbeat holds, flips the rest and waits for nothing', async () => {
    await sql`UPDATE devices SET status = 'online' WHERE tenant_id = ${tenant} AND name <= 'dev-000005'`.execute(t.store.db);
    const second = await openStore(t.openOptions);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const heartbeat = second.db.transaction().execute(async (trx) => {
      await sql`SELECT id FROM devices WHERE tenant_id = ${tenant} AND name = 'dev-000003' FOR UPDATE`.execute(trx);
      locked();
      await held;
    });
    try {
      await isLocked;
      // batches of 2: {1, 2}, then {4, 5} (3 is held), then none
      expect(await markStaleDevicesOffline(t.store.db, new Date('2021-01-01T00:00:00Z'), 2)).toBe(4);
      const online = await t.store.db.selectFrom('devices').select('name').where('status', '=', 'online').execute();
      expect(online.map((d) => d.name)).toEqual(['dev-000003']);
    } finally {
      release();
      await heartbeat;
      await second.close();
    }
    expect(await markStaleDevicesOffline(t.store.db, new Date('2021-01-01T00:00:00Z'), 2)).toBe(1);
    expect(await counts()).toEqual({ online: 0, offline: 21000, decommissioned: 0 });
  });

  it('moving a device to another tenant moves its count', async () => {
    await sql`UPDATE devices SET tenant_id = ${other}::uuid, status = 'decommissioned' WHERE tenant_id = ${tenant} AND name = 'dev-000001'`.execute(t.store.db);
    expect(await counts()).toEqual({ online: 0, offline: 20999, decommissioned: 0 });
    expect(await deviceCounts(t.store.db, other)).toEqual({ online: 0, offline: 1, decommissioned: 1 });
  });
});
