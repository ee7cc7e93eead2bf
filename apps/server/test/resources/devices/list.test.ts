import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';
import { DeviceListAnchors } from '../../../src/resources/devices/anchors.js';
import { DeviceSearchCache } from '../../../src/resources/devices/search-cache.js';
import { markDeviceSeen } from '../../../src/resources/devices/queries/presence.js';
import { deviceListKey, listDevices, type DeviceFilter } from '../../../src/resources/devices/queries/list.js';

/**
 * GET /devices item bytes (the database writes the page's JSON, spec §8) against the
 * single-device route (serialized by fastify from the schema), the list body against the
 * route's own response schema (the list route sends pre-written JSON, so nothing else checks
 * it), and the offset path (skip on the name index, then fetch the page) against the
 * first-page path.
 */
describe.each(availableDrivers())('devices list formatting and offsets on %s', (driver) => {
  let t: TestApp;
  let viewer: { authorization: string };
  const get = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: viewer });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    t = await createTestApp(driver);
    viewer = await t.apiKeyHeaders('viewer');
    const db = t.testStore.store.db;
    // Microsecond timestamps (JavaScript keeps milliseconds, truncated), a null last_seen,
    // a year with a leading zero, every status, nulls in the text fields.
    await sql`INSERT INTO devices (tenant_id, name, status, profile, agent_version, last_seen, cert_fingerprint, created_at)
      SELECT ${t.tenantId}::uuid, 'n-' || lpad(i::text, 3, '0'),
        (ARRAY['online', 'offline', 'decommissioned'])[1 + i % 3],
        CASE WHEN i % 4 = 0 THEN NULL ELSE 'p' || i END,
        CASE WHEN i % 5 = 0 THEN NULL ELSE '1.' || i END,
        CASE WHEN i % 6 = 0 THEN NULL ELSE '2026-03-04T05:06:07.123999Z'::timestamptz + i * interval '1 second 999 microseconds' END,
        CASE WHEN i % 7 = 0 THEN NULL ELSE 'sha256:' || md5(i::text) END,
        CASE WHEN i = 1 THEN '0999-12-31T23:59:59.999999Z'::timestamptz ELSE '2025-01-01T00:00:00Z'::timestamptz + i * interval '1 day' END
      FROM generate_series(1, 130) AS i`.execute(db);
    // Text the JSON writer must escape: quotes, backslash, control characters, DEL,
    // non-ASCII, an astral character, U+2028, and markup.
    await sql`INSERT INTO devices (tenant_id, name, status, profile, agent_version, cert_fingerprint)
      VALUES (${t.tenantId}::uuid, 'z-awkward', 'online', ${'a"b\\c\nd\te\u0001\u001f\u007f'}, ${'ü 😀 \u2028 </script>'}, ${'{"x":[1]}'})`.execute(db);
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it('each list item is byte-identical to GET /devices/{name}', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/devices?limit=200', headers: viewer });
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const items = res.json().devices;
    expect(items).toHaveLength(131);
    for (const item of items) {
      const one = await t.app.inject({ method: 'GET', url: `/api/v1/devices/${item.name}`, headers: viewer });
      // Byte for byte: the database's JSON text of the item is the serializer's text of the
      // same fields (the single device's view goes on with its current release and software).
      const at = one.body.indexOf(',"current_release":');
      expect(at, item.name).toBeGreaterThan(0);
      expect(res.body, item.name).toContain(`${one.body.slice(0, at)}}`);
    }
    expect(items.at(-1)).toEqual({
      name: 'z-awkward',
      status: 'online',
      profile: 'a"b\\c\nd\te\u0001\u001f\u007f',
      agent_version: 'ü 😀 \u2028 </script>',
      last_seen: null,
      cert_fingerprint: '{"x":[1]}',
      created_at: expect.any(String),
    });
    expect(items[5]).toMatchObject({ name: 'n-006', last_seen: null, created_at: '2025-01-07T00:00:00.000Z' });
    expect(items[0]).toMatchObject({ name: 'n-001', last_seen: '2026-03-04T05:06:08.124Z', created_at: '0999-12-31T23:59:59.999Z' });
  });

  it('every page matches the response schema of the OpenAPI document, keys in schema order', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: viewer })).json();
    const schema = doc.paths['/api/v1/devices'].get.responses['200'].content['application/json'].schema;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile({ ...schema, unevaluatedProperties: false });
    const itemKeys = Object.keys(schema.properties.devices.items.properties);
    for (const query of ['', '?limit=200', '?status=offline', '?q=0', '?q=no-such', '?offset=500', '?offset=7&limit=3&status=online&q=1']) {
      const body = await get(`/devices${query}`);
      expect(validate(body), `${query}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      expect(Object.keys(body)).toEqual(['devices', 'total', 'limit', 'offset', 'counts']);
      for (const d of body.devices) expect(Object.keys(d)).toEqual(itemKeys);
    }
    // The schema is strict enough to fail: a wrong type is refused.
    expect(validate({ devices: [{ name: 1 }], total: 0, limit: 50, offset: 0, counts: { online: 0, offline: 0, decommissioned: 0 } })).toBe(false);
  });

  it('offset pages equal slices of the whole ordered list, with and without filters', async () => {
    for (const filter of ['', 'status=offline&', 'q=1&', 'status=online&q=2&']) {
      const all = (await get(`/devices?${filter}limit=200`)).devices.map((d: { name: string }) => d.name);
      for (const [offset, limit] of [
        [1, 7],
        [10, 10],
        [all.length - 3, 50],
        [all.length, 5],
      ] as const) {
        const body = await get(`/devices?${filter}limit=${limit}&offset=${offset}`);
        expect(
          body.devices.map((d: { name: string }) => d.name),
          `${filter} offset ${offset}`,
        ).toEqual(all.slice(offset, offset + limit));
        expect(body).toMatchObject({ total: all.length, limit, offset });
      }
    }
  });

  it('deep pages from anchors equal slices of the whole list; a change to the list is never served from stale anchors', async () => {
    const db = t.testStore.store.db;
    const anchors = new DeviceListAnchors({ every: 7, minRebuildMs: 0 });
    const names = async (filter: Partial<DeviceFilter>, offset: number, limit = 200) =>
      (JSON.parse((await listDevices(db, t.tenantId, { limit, offset, ...filter }, anchors)).devicesJson) as { name: string }[]).map((d) => d.name);
    const version = async () => (await db.selectFrom('device_list_versions').select('version').where('tenant_id', '=', t.tenantId).executeTakeFirst())?.version;
    const warm = async (filter: Partial<DeviceFilter>) => {
      await names(filter, 7, 1); // a deep request starts the build
      await expect.poll(() => anchors.get(deviceListKey(t.tenantId, filter)) !== undefined).toBe(true);
    };
    for (const filter of [{}, { status: 'offline' as const }, { q: '1' }, { status: 'online' as const, q: '2' }]) {
      await warm(filter);
      const all = await names(filter, 0);
      for (const offset of [7, 8, 13, 14, 20, 50, all.length - 1, all.length, all.length + 9]) {
        for (const limit of [1, 5, 50])
          expect(await names(filter, offset, limit), `${JSON.stringify(filter)} ${offset}/${limit}`).toEqual(all.slice(offset, offset + limit));
      }
    }

    // A device that sorts first shifts every position by one: the anchors are stale.
    await warm({});
    const before = await names({}, 0);
    const v0 = await version();
    await sql`INSERT INTO devices (tenant_id, name, status) VALUES (${t.tenantId}::uuid, 'a-first', 'online')`.execute(db);
    expect(await version()).not.toBe(v0);
    expect(await names({}, 14, 7)).toEqual(['a-first', ...before].slice(14, 21));
    // A status change reorders the status lists.
    await warm({ status: 'offline' });
    const offline = await names({ status: 'offline' }, 0);
    await sql`UPDATE devices SET status = 'online' WHERE tenant_id = ${t.tenantId}::uuid AND name = ${offline[3]!}`.execute(db);
    expect(await names({ status: 'offline' }, 7, 5)).toEqual(offline.filter((_, i) => i !== 3).slice(7, 12));
    // A heartbeat (status unchanged) does not change the version.
    const v1 = await version();
    await markDeviceSeen(db, t.tenantId, 'a-first', { now: new Date() });
    expect(await version()).toBe(v1);
    await sql`DELETE FROM devices WHERE tenant_id = ${t.tenantId}::uuid AND name = 'a-first'`.execute(db);
    expect(await version()).not.toBe(v1);
  });

  it('q pages from remembered searches equal the uncached pages; a change to the list or to an item is served at once', async () => {
    const db = t.testStore.store.db;
    const searches = new DeviceSearchCache();
    const page = async (filter: Partial<DeviceFilter>, cache?: DeviceSearchCache) => {
      const p = await listDevices(db, t.tenantId, { limit: 5, offset: 0, ...filter }, undefined, cache);
      return { devices: JSON.parse(p.devicesJson) as { name: string; last_seen: string | null }[], total: p.total, counts: p.counts };
    };
    const same = async (filter: Partial<DeviceFilter>) => {
      const uncached = await page(filter);
      expect(await page(filter, searches), `first ${JSON.stringify(filter)}`).toEqual(uncached); // a miss: walked and counted
      expect(await page(filter, searches), `again ${JSON.stringify(filter)}`).toEqual(uncached); // a hit
      return uncached;
    };
    const filters: Partial<DeviceFilter>[] = [{ q: '1' }, { q: '1', offset: 3 }, { q: '2', status: 'online' }, { q: 'N-0' }, { q: '%' }, { q: 'nothing' }];
    for (const filter of filters) await same(filter);
    expect(searches.size).toBe(filters.length);

    // A remembered page is used at its version only: a forged total at the current version is
    // served (the hit path runs), at another version it is not.
    const key = `${deviceListKey(t.tenantId, { q: '1' })}|5|0`;
    const remembered = searches.get(key)!;
    searches.set(key, { ...remembered, total: 999 });
    expect((await page({ q: '1' }, searches)).total).toBe(999);
    searches.set(key, { ...remembered, version: String(Number(remembered.version) - 1), total: 999 });
    expect((await page({ q: '1' }, searches)).total).toBe(remembered.total);

    // A device added, a status changed, a device removed: the next search sees it.
    await sql`INSERT INTO devices (tenant_id, name, status) VALUES (${t.tenantId}::uuid, 'a-1-first', 'online')`.execute(db);
    expect((await same({ q: '1' })).devices[0]!.name).toBe('a-1-first');
    const online = await same({ q: '2', status: 'online' });
    await sql`UPDATE devices SET status = 'offline' WHERE tenant_id = ${t.tenantId}::uuid AND name = ${online.devices[0]!.name}`.execute(db);
    expect((await same({ q: '2', status: 'online' })).total).toBe(online.total - 1);
    // A heartbeat keeps the version (the names are reused) and its last_seen is served.
    const seen = new Date('2027-01-02T03:04:05.678Z');
    await markDeviceSeen(db, t.tenantId, 'a-1-first', { now: seen });
    expect((await same({ q: '1' })).devices[0]!.last_seen).toBe(seen.toISOString());
    await sql`DELETE FROM devices WHERE tenant_id = ${t.tenantId}::uuid AND name = 'a-1-first'`.execute(db);
    expect((await same({ q: '1' })).devices.map((d) => d.name)).not.toContain('a-1-first');
  });
});
