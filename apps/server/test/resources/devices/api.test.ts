import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fulfillLogRequest, takePendingLogRequests } from '../../../src/resources/log-requests/queries.js';
import { getDeviceByName, upsertEnrolledDevice } from '../../../src/resources/devices/queries/identity.js';
import { markDeviceSeen, markStaleDevicesOffline } from '../../../src/resources/devices/queries/presence.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';

describe.each(availableDrivers())('devices API on %s', (driver) => {
  let t: TestApp;
  let viewer: { cookie: string };
  let operator: { cookie: string };
  const list = async (qs: string, headers: Record<string, string> = viewer) => t.app.inject({ method: 'GET', url: `/api/v1/devices${qs}`, headers });

  beforeAll(async () => {
    t = await createTestApp(driver);
    viewer = await t.loginAs('viewer');
    operator = await t.loginAs('operator');
    const db = t.testStore.store.db;
    // 120 devices: 70 online, 50 offline; names sort as dev-000..dev-119, plus two with LIKE meta-characters.
    await db
      .insertInto('devices')
      .values(
        Array.from({ length: 120 }, (_, i) => ({
          tenant_id: t.tenantId,
          name: `dev-${String(i).padStart(3, '0')}`,
          status: i < 70 ? 'online' : 'offline',
          profile: 'linux-arm64',
        })),
      )
      .execute();
    await upsertEnrolledDevice(db, { tenantId: t.tenantId, name: 'a_b.c', certFingerprint: 'sha256:aa', certNotAfter: null, now: t.clock.now() });
    await upsertEnrolledDevice(db, { tenantId: t.tenantId, name: 'axb-c', certFingerprint: 'sha256:bb', certNotAfter: null, now: t.clock.now() });
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('first page: default limit 50, total, offset and counts over the whole tenant', async () => {
    const res = await list('');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.devices).toHaveLength(50);
    expect(body).toMatchObject({ total: 122, limit: 50, offset: 0, counts: { online: 72, offline: 50, decommissioned: 0 } });
    expect(body.devices[0]).toMatchObject({ name: 'a_b.c', status: 'online' });
  });

  it('walking offset by limit reads every device exactly once', async () => {
    const seen: string[] = [];
    for (let offset = 0; ; offset += 50) {
      const body = (await list(`?limit=50&offset=${offset}`)).json();
      seen.push(...body.devices.map((d: { name: string }) => d.name));
      if (offset + 50 >= body.total) break;
    }
    expect(seen).toHaveLength(122);
    expect(new Set(seen).size).toBe(122);
  });

  it('status filter: total is the filtered set, counts stay whole-tenant', async () => {
    const body = (await list('?status=offline&limit=10')).json();
    expect(body.devices).toHaveLength(10);
    expect(body.devices.every((d: { status: string }) => d.status === 'offline')).toBe(true);
    expect(body.total).toBe(50);
    expect(body.counts).toEqual({ online: 72, offline: 50, decommissioned: 0 });
  });

  it('q matches substrings; LIKE and SQL meta-characters are literal', async () => {
    expect((await list('?q=dev-11')).json().total).toBe(10);
    expect((await list('?q=DEV-11')).json().total).toBe(10);
    const underscore = (await list(`?q=${encodeURIComponent('_')}`)).json();
    expect(underscore.devices.map((d: { name: string }) => d.name)).toEqual(['a_b.c']);
    expect((await list(`?q=${encodeURIComponent('%')}`)).json().total).toBe(0);
    expect((await list(`?q=${encodeURIComponent("'; DROP TABLE devices; --")}`)).json().total).toBe(0);
    expect((await list(`?q=${encodeURIComponent('\\')}`)).json().total).toBe(0);
    expect((await list('?q=dev&status=offline&limit=5')).json()).toMatchObject({ total: 50, limit: 5 });
  });

  it('limit above 200 is clamped to 200', async () => {
    const body = (await list('?limit=100000')).json();
    expect(body.limit).toBe(200);
    expect(body.devices).toHaveLength(122);
  });

  it('negative or garbage limit/offset and unknown status are 400s naming the field', async () => {
    for (const [qs, field] of [
      ['?offset=-1', 'offset'],
      ['?offset=abc', 'offset'],
      ['?limit=-5', 'limit'],
      ['?limit=0', 'limit'],
      ['?limit=ten', 'limit'],
      ['?status=broken', 'status'],
      ['?sort=size', 'sort'],
    ] as const) {
      const res = await list(qs);
      expect(res.statusCode, qs).toBe(400);
      expect(res.json().error, qs).toContain(field);
    }
  });

  it('q is served by a trigram GIN index on name (the bench prints the 100k-row plan)', async () => {
    const idx = await sql<{ indexdef: string }>`
      SELECT indexdef FROM pg_indexes WHERE schemaname = ${t.testStore.store.schema} AND indexname = 'devices_name_trgm'`.execute(t.testStore.store.db);
    expect(idx.rows[0]?.indexdef).toMatch(/USING gin \(name (public\.)?gin_trgm_ops\)/);
  });

  it('another tenant sees none of these devices and gets 404 by name', async () => {
    const other = await t.newTenant();
    const otherViewer = await t.loginAs('viewer', other);
    expect((await list('', otherViewer)).json()).toMatchObject({ total: 0, devices: [], counts: { online: 0, offline: 0, decommissioned: 0 } });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/devices/dev-001/history', headers: otherViewer })).statusCode).toBe(404);
    const otherOp = await t.loginAs('operator', other);
    expect((await t.app.inject({ method: 'DELETE', url: '/api/v1/devices/dev-001', headers: otherOp })).statusCode).toBe(404);
    expect((await getDeviceByName(t.testStore.store.db, t.tenantId, 'dev-001'))?.status).toBe('online');
  });

  it('decommission: 204, status, counts, history entry and audit event', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/api/v1/devices/dev-002', headers: operator });
    expect(res.statusCode).toBe(204);
    const body = (await list('?status=decommissioned')).json();
    expect(body.devices.map((d: { name: string }) => d.name)).toEqual(['dev-002']);
    expect(body.counts).toEqual({ online: 71, offline: 50, decommissioned: 1 });
    const history = (await t.app.inject({ method: 'GET', url: '/api/v1/devices/dev-002/history', headers: viewer })).json();
    expect(history.history[0]).toMatchObject({ event: 'decommissioned' });
    const events = await t.testStore.store.db.selectFrom('audit_events').selectAll().where('action', '=', 'device.decommission').execute();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ target: 'device:dev-002', credential: 'session', tenant_id: t.tenantId });
    // A heartbeat does not resurrect it.
    await markDeviceSeen(t.testStore.store.db, t.tenantId, 'dev-002', { now: t.clock.now() });
    expect((await getDeviceByName(t.testStore.store.db, t.tenantId, 'dev-002'))?.status).toBe('decommissioned');
    // A viewer cannot decommission.
    const denied = await t.app.inject({ method: 'DELETE', url: '/api/v1/devices/dev-003', headers: viewer });
    expect(denied.json()).toEqual({ error: 'missing permission: devices.write' });
  });

  it('heartbeat and offline detection keep counts right', async () => {
    const db = t.testStore.store.db;
    await markDeviceSeen(db, t.tenantId, 'dev-100', { now: t.clock.now(), agentVersion: '1.2.3' });
    let counts = (await list('')).json().counts;
    expect(counts).toEqual({ online: 72, offline: 49, decommissioned: 1 });
    const history = (await t.app.inject({ method: 'GET', url: '/api/v1/devices/dev-100/history', headers: viewer })).json();
    expect(history.history[0].event).toBe('online');
    // Devices inserted without last_seen are never "stale"; dev-100 and the enrolled ones are.
    const n = await markStaleDevicesOffline(db, new Date(t.clock.now().getTime() + 1000));
    expect(n).toBe(3);
    counts = (await list('')).json().counts;
    expect(counts).toEqual({ online: 69, offline: 52, decommissioned: 1 });
  });

  it('log request: 202 pending, delivered on heartbeat, downloadable once uploaded', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/devices/dev-010/log-requests', headers: operator });
    expect(created.statusCode).toBe(202);
    const { id, status } = created.json();
    expect(status).toBe('pending');
    const url = `/api/v1/devices/dev-010/log-requests/${id}`;
    expect((await t.app.inject({ method: 'GET', url: `${url}/download`, headers: viewer })).statusCode).toBe(409);
    const device = (await getDeviceByName(t.testStore.store.db, t.tenantId, 'dev-010'))!;
    expect(await takePendingLogRequests(t.testStore.store.db, device.id)).toEqual([id]);
    expect((await t.app.inject({ method: 'GET', url, headers: viewer })).json().status).toBe('delivered');
    expect(await fulfillLogRequest(t.testStore.store.db, device.id, id, new TextEncoder().encode('log line\n'), 'text/plain', t.clock.now())).toBe(true);
    const download = await t.app.inject({ method: 'GET', url: `${url}/download`, headers: viewer });
    expect(download.statusCode).toBe(200);
    expect(download.body).toBe('log line\n');
    expect(download.headers['content-type']).toMatch(/text\/plain/);
    // Another device's path does not reach it.
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/devices/dev-011/log-requests/${id}`, headers: viewer })).statusCode).toBe(404);
  });
});
