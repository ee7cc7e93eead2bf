import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';

interface Item {
  name: string;
  status: string;
  last_seen: string | null;
}

/**
 * GET /devices?sort=: each order against the same devices sorted here from the default
 * (by name) list, every page a slice of the whole ordered list, with and without filters;
 * the default order's answer is unchanged by `sort=name`; a bad value is a 400 naming `sort`.
 */
describe.each(availableDrivers())('devices list sort on %s', (driver) => {
  let t: TestApp;
  let viewer: { authorization: string };
  const get = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: viewer });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ devices: Item[]; total: number; limit: number; offset: number; counts: Record<string, number> }>();
  };

  beforeAll(async () => {
    t = await createTestApp(driver);
    viewer = await t.apiKeyHeaders('viewer');
    // Every status, never-seen devices (null last_seen) and runs of equal last_seen, so the
    // name tie-break decides part of every order.
    await sql`INSERT INTO devices (tenant_id, name, status, last_seen)
      SELECT ${t.tenantId}::uuid, 's-' || lpad(((i * 37) % 97)::text, 2, '0') || '-' || i,
        (ARRAY['online', 'offline', 'decommissioned'])[1 + i % 3],
        CASE WHEN i % 9 = 0 THEN NULL ELSE '2026-05-01T00:00:00Z'::timestamptz + (i % 11) * interval '1 minute' END
      FROM generate_series(1, 90) AS i`.execute(t.testStore.store.db);
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  /** The expected order, from the server's default (name) order and a comparison here. */
  function expected(byName: Item[], sort: string): string[] {
    const rank = new Map(byName.map((d, i) => [d.name, i]));
    const key = sort.replace(/^-/, '') as 'name' | 'last_seen' | 'status';
    const cmp = (a: Item, b: Item): number => {
      if (key === 'last_seen' && a.last_seen !== b.last_seen) {
        if (a.last_seen === null) return 1; // nulls sort last ascending
        if (b.last_seen === null) return -1;
        return Date.parse(a.last_seen) - Date.parse(b.last_seen);
      }
      if (key === 'status' && a.status !== b.status) return a.status < b.status ? -1 : 1;
      return rank.get(a.name)! - rank.get(b.name)!;
    };
    const sorted = [...byName].sort(cmp);
    return (sort.startsWith('-') ? sorted.reverse() : sorted).map((d) => d.name);
  }

  it('each order is the list sorted by its key, name breaking ties, and "-" its exact reverse; pages are slices', async () => {
    for (const filter of ['', 'status=offline&', 'q=-1&', 'status=online&q=s-&']) {
      const byName = await get(`/devices?${filter}limit=200`);
      expect(byName.devices.length, filter).toBeGreaterThan(3);
      for (const sort of ['-name', 'last_seen', '-last_seen', 'status', '-status']) {
        const want = expected(byName.devices, sort);
        const whole = await get(`/devices?${filter}sort=${sort}&limit=200`);
        expect(
          whole.devices.map((d) => d.name),
          `${filter}${sort}`,
        ).toEqual(want);
        expect(whole.total).toBe(byName.total);
        expect(whole.counts).toEqual(byName.counts);
        for (const [offset, limit] of [
          [0, 7],
          [5, 10],
          [want.length - 2, 50],
          [want.length, 5],
        ] as const) {
          const body = await get(`/devices?${filter}sort=${sort}&limit=${limit}&offset=${offset}`);
          expect(
            body.devices.map((d) => d.name),
            `${filter}${sort} ${offset}/${limit}`,
          ).toEqual(want.slice(offset, offset + limit));
          expect(body).toMatchObject({ total: want.length, limit, offset });
        }
      }
    }
    // the keys really differ here: neither order is the name order
    const byName = (await get('/devices?limit=200')).devices.map((d) => d.name);
    expect((await get('/devices?sort=last_seen&limit=200')).devices.map((d) => d.name)).not.toEqual(byName);
    expect((await get('/devices?sort=status&limit=200')).devices.map((d) => d.name)).not.toEqual(byName);
  });

  it('sort=name answers exactly what no sort answers (the default path)', async () => {
    for (const query of ['limit=10', 'limit=10&offset=20', 'status=decommissioned&limit=5&offset=3', 'q=s-1&limit=4']) {
      const plain = await t.app.inject({ method: 'GET', url: `/api/v1/devices?${query}`, headers: viewer });
      const named = await t.app.inject({ method: 'GET', url: `/api/v1/devices?${query}&sort=name`, headers: viewer });
      expect(named.body, query).toBe(plain.body);
    }
  });

  it('a bad sort is a 400 naming sort; the OpenAPI document lists the orders', async () => {
    for (const bad of ['created_at', 'NAME', '--name', '']) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/devices?sort=${encodeURIComponent(bad)}`, headers: viewer });
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error, bad).toContain('sort');
    }
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: viewer })).json();
    const param = doc.paths['/api/v1/devices'].get.parameters.find((p: { name: string }) => p.name === 'sort');
    expect(param.schema.enum).toEqual(['name', '-name', 'last_seen', '-last_seen', 'status', '-status']);
  });
});
