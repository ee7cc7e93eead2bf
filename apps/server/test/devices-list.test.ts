import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.js';
import { availableDrivers } from './helpers/store.js';

/**
 * GET /devices item bytes (the database formats the page, spec 8) against the single-device
 * route (formatted in JavaScript), and the offset path (skip on the name index, then fetch
 * the page) against the first-page path.
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
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  it('each list item is byte-identical to GET /devices/{name}', async () => {
    const items = [...(await get('/devices?limit=200')).devices];
    expect(items).toHaveLength(130);
    for (const item of items) expect(item).toEqual(await get(`/devices/${item.name}`));
    expect(items[5]).toMatchObject({ name: 'n-006', last_seen: null, created_at: '2025-01-07T00:00:00.000Z' });
    expect(items[0]).toMatchObject({ name: 'n-001', last_seen: '2026-03-04T05:06:08.124Z', created_at: '0999-12-31T23:59:59.999Z' });
  });

  it('offset pages equal slices of the whole ordered list, with and without filters', async () => {
    for (const filter of ['', 'status=offline&', 'q=1&', 'status=online&q=2&']) {
      const all = (await get(`/devices?${filter}limit=200`)).devices.map((d: { name: string }) => d.name);
      for (const [offset, limit] of [[1, 7], [10, 10], [all.length - 3, 50], [all.length, 5]] as const) {
        const body = await get(`/devices?${filter}limit=${limit}&offset=${offset}`);
        expect(body.devices.map((d: { name: string }) => d.name), `${filter} offset ${offset}`).toEqual(all.slice(offset, offset + limit));
        expect(body).toMatchObject({ total: all.length, limit, offset });
      }
    }
  });
});
