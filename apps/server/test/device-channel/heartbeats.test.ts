import 'reflect-metadata';
import type { CheckInResponse, EnrollResponse } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceLastSeen, markDevicesOnline, markStaleDevicesOffline } from '../../src/resources/devices/queries/presence.js';
import { insertLogRequest } from '../../src/resources/log-requests/queries.js';
import { channelCredentials, clientsFor, csrFor, newDeviceKey, startChannelFixture, unary, type ChannelFixture } from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';

/**
 * Check-ins of online devices whose inventory did not change only advance `last_seen`, and
 * the channel writes those coalesced, once a second (device-channel/last-seen.ts); a check-in
 * that changes the device (status, inventory) or hands over a log request is written at once.
 */
describe.each(availableDrivers())('device heartbeats on %s', (driver) => {
  let f: ChannelFixture;
  beforeAll(async () => {
    f = await startChannelFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  const INVENTORY = { agentVersion: '0.1.0', profile: 'linux-arm64', product: 'x', slots: [], attributes: undefined };

  async function device(name: string) {
    const key = await newDeviceKey();
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    const res = await unary<EnrollResponse>(async (cb) =>
      anon.enrollment.enroll({ token: await f.newToken(), deviceName: name, csrDer: await csrFor(key, name), inventory: INVENTORY }, cb),
    ).finally(() => anon.close());
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: encodePem(res.certificateDer, 'CERTIFICATE') }));
    return { c, checkIn: (inventory = INVENTORY) => unary<CheckInResponse>((cb) => c.device.checkIn({ inventory }, cb)) };
  }
  const row = (name: string) => f.t.store.db.selectFrom('devices').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
  const history = async (name: string) =>
    (
      await f.t.store.db
        .selectFrom('device_history as h')
        .innerJoin('devices as d', 'd.id', 'h.device_id')
        .select('h.event')
        .where('d.name', '=', name)
        .orderBy('h.at')
        .execute()
    ).map((h) => h.event);

  it('a plain check-in of an online device is buffered, then written by the next flush; nothing else of the row changes', async () => {
    const d = await device('hb-plain');
    try {
      const before = await row('hb-plain');
      await d.checkIn();
      await d.checkIn();
      expect(f.ctx.lastSeen.size).toBeGreaterThanOrEqual(1);
      // not yet written (the 1 s flush may have run between the calls: then it is at least as new)
      const mid = await row('hb-plain');
      expect(mid.status).toBe('online');
      await f.ctx.lastSeen.flush();
      const after = await row('hb-plain');
      expect(after.last_seen!.getTime()).toBeGreaterThan(before.last_seen!.getTime());
      expect({ ...after, last_seen: null, list_json: null }).toEqual({ ...before, last_seen: null, list_json: null });
      expect(await history('hb-plain')).toEqual(['enrolled']);
    } finally {
      d.c.close();
    }
  });

  it('an offline device comes back online with its history entry at the next flush; a new inventory is written at once', async () => {
    const d = await device('hb-change');
    try {
      await f.t.store.db.updateTable('devices').set({ status: 'offline' }).where('name', '=', 'hb-change').execute();
      await d.checkIn();
      await f.ctx.lastSeen.flush();
      expect((await row('hb-change')).status).toBe('online');
      expect(await history('hb-change')).toEqual(['enrolled', 'online']);
      // online already: a second flush adds no entry
      await d.checkIn();
      await f.ctx.lastSeen.flush();
      expect(await history('hb-change')).toEqual(['enrolled', 'online']);
      await d.checkIn({ ...INVENTORY, agentVersion: '0.2.0' });
      expect((await row('hb-change')).agent_version).toBe('0.2.0');
    } finally {
      d.c.close();
    }
  });

  it('many offline devices come back in one flush: counts follow, one history entry each, decommissioned ones stay', async () => {
    const db = f.t.store.db;
    const names = ['hb-many-0', 'hb-many-1', 'hb-many-2'];
    const ids: string[] = [];
    for (const n of names) {
      const d = await device(n);
      d.c.close();
      ids.push((await row(n)).id);
    }
    await db.updateTable('devices').set({ status: 'offline' }).where('name', 'in', names.slice(0, 2)).execute();
    await db.updateTable('devices').set({ status: 'decommissioned' }).where('name', '=', names[2]!).execute();
    const counts = async () =>
      Object.fromEntries(
        (await db.selectFrom('device_counts').select(['status', 'n']).where('tenant_id', '=', f.tenantId).execute()).map((c) => [c.status, Number(c.n)]),
      );
    const before = await counts();
    const at = new Date(Date.now() + 1000);
    expect(
      await markDevicesOnline(
        db,
        ids.map((id) => ({ id, at })),
      ),
    ).toBe(2);
    const after = await counts();
    expect(after.online).toBe(before.online! + 2);
    expect(after.offline).toBe(before.offline! - 2);
    expect((await row(names[2]!)).status).toBe('decommissioned');
    for (const n of names.slice(0, 2)) expect(await history(n)).toEqual(['enrolled', 'online']);
  });

  it('a pending log request is handed over (delivered) by the check-in itself, and offered again until uploaded', async () => {
    const d = await device('hb-logs');
    try {
      const id = (await row('hb-logs')).id;
      const req = await insertLogRequest(f.t.store.db, f.tenantId, id, 'admin@example.test');
      expect((await d.checkIn()).logRequests.map((r) => r.id)).toEqual([req.id]);
      expect((await f.t.store.db.selectFrom('log_requests').select('status').where('id', '=', req.id).executeTakeFirstOrThrow()).status).toBe('delivered');
      expect((await d.checkIn()).logRequests.map((r) => r.id)).toEqual([req.id]);
    } finally {
      d.c.close();
    }
  });

  it('the batch write only moves last_seen forward and leaves decommissioned devices alone', async () => {
    const db = f.t.store.db;
    const a = await device('hb-batch-a');
    const b = await device('hb-batch-b');
    a.c.close();
    b.c.close();
    const ra = await row('hb-batch-a');
    const rb = await row('hb-batch-b');
    await db.updateTable('devices').set({ status: 'decommissioned' }).where('name', '=', 'hb-batch-b').execute();
    const later = new Date(ra.last_seen!.getTime() + 60_000);
    const earlier = new Date(ra.last_seen!.getTime() - 60_000);
    expect(
      await advanceLastSeen(db, [
        { id: ra.id, at: later },
        { id: rb.id, at: later },
      ]),
    ).toBe(1);
    expect((await row('hb-batch-a')).last_seen).toEqual(later);
    expect((await row('hb-batch-b')).last_seen).toEqual(rb.last_seen);
    expect(await advanceLastSeen(db, [{ id: ra.id, at: earlier }])).toBe(0);
    expect((await row('hb-batch-a')).last_seen).toEqual(later);
  });

  it('the offline detector still finds stale online devices without the last_seen index', async () => {
    const db = f.t.store.db;
    const d = await device('hb-stale');
    d.c.close();
    const r = await row('hb-stale');
    await markStaleDevicesOffline(db, new Date(r.last_seen!.getTime() + 1));
    expect((await row('hb-stale')).status).toBe('offline');
  });

  it.runIf(driver === 'postgres')('the batch write is a HOT update: no index of devices gets an entry', async () => {
    const db = f.t.store.db;
    const d = await device('hb-hot');
    d.c.close();
    const r = await row('hb-hot');
    // PostgreSQL 15's pg_stat_xact_* also show a backend's counts not yet flushed from its earlier
    // transactions (a pooled connection has some): the update's own share is the difference
    const counts = await db.transaction().execute(async (trx) => {
      const read = async () =>
        (
          await sql<{ upd: string; hot: string }>`
            SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables WHERE relid = 'devices'::regclass`.execute(trx)
        ).rows[0]!;
      const before = await read();
      await advanceLastSeen(trx, [{ id: r.id, at: new Date(r.last_seen!.getTime() + 1000) }]);
      const after = await read();
      return { upd: Number(after.upd) - Number(before.upd), hot: Number(after.hot) - Number(before.hot) };
    });
    expect(counts.upd).toBe(1);
    expect(counts.hot).toBe(1);
  });
});
