import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFilter, type FilterNode } from '../../../src/resources/devices/filter/index.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';
import { SERVER_LIMITS } from '../../../src/limits.js';

interface Dev {
  name: string;
  status: string;
  profile: string | null;
  agent_version: string | null;
  tags: string[];
  attributes: Record<string, string>;
  custom: Record<string, string>;
}

/** The documented order of <, <=, >, >= (docs/device-filter.md), written here independently of the SQL. */
function versionKey(v: string): string | null {
  if (v === '') return null;
  return v
    .split('.')
    .map((p) => (/^[0-9]{1,20}$/.test(p) ? p.padStart(20, '0') : p))
    .join('.');
}

/** What each filter should select, by the meaning docs/device-filter.md gives it. */
function matches(n: FilterNode, d: Dev): boolean {
  switch (n.kind) {
    case 'and':
      return matches(n.left, d) && matches(n.right, d);
    case 'or':
      return matches(n.left, d) || matches(n.right, d);
    case 'not':
      return !matches(n.operand, d);
    case 'compare': {
      const f = n.field;
      if (f.kind === 'tags') return d.tags.includes(n.value);
      const v: string | null | undefined = f.kind === 'attribute' ? d[f.namespace][f.key] : d[f.name];
      const has = v !== null && v !== undefined;
      switch (n.op) {
        case '=':
          return has && v === n.value;
        case '!=':
          return !has || v !== n.value;
        case '~':
          return has && v.toLowerCase().includes(n.value.toLowerCase());
        default: {
          if (!has) return false;
          const a = versionKey(v);
          const b = versionKey(n.value);
          if (a === null || b === null) return false;
          const c = Buffer.compare(Buffer.from(a), Buffer.from(b));
          return n.op === '<' ? c < 0 : n.op === '<=' ? c <= 0 : n.op === '>' ? c > 0 : c >= 0;
        }
      }
    }
    default:
      return false;
  }
}

/** A small fleet with every kind of value: missing attributes, versions of unequal length, % and _ in values. */
function fleet(): Dev[] {
  const models = ['gw-3', 'gw-10', 'GW-3x', 'edge_50%'];
  const versions = ['2.3.9', '2.4.0', '2.10.1', '10.0', null];
  const out: Dev[] = [];
  for (let i = 0; i < 60; i++) {
    const attributes: Record<string, string> = { arch: i % 2 ? 'arm64' : 'x64' };
    if (i % 5 !== 0) attributes.hw_model = models[i % models.length]!;
    if (i % 3 === 0) attributes.staging_free_bytes = String(900 * (i + 1));
    const custom: Record<string, string> = i % 4 === 0 ? { site: i % 8 === 0 ? 'lyon' : "o'hare; --" } : {};
    out.push({
      name: `f-${String(i).padStart(2, '0')}`,
      status: ['online', 'offline', 'decommissioned'][i % 3]!,
      profile: i % 7 === 0 ? null : 'linux-arm64',
      agent_version: versions[i % versions.length]!,
      tags: [i % 2 ? 'eu' : 'us', ...(i % 6 === 0 ? ['pilot'] : [])].sort(),
      attributes,
      custom,
    });
  }
  return out;
}

describe.each(availableDrivers())('GET /devices?filter= on %s', (driver) => {
  let t: TestApp;
  let viewer: { authorization: string };
  const devs = fleet();
  beforeAll(async () => {
    t = await createTestApp(driver);
    viewer = await t.apiKeyHeaders('viewer');
    const db = t.testStore.store.db;
    for (const d of devs) {
      await db
        .insertInto('devices')
        .values({
          tenant_id: t.tenantId,
          name: d.name,
          status: d.status,
          profile: d.profile,
          agent_version: d.agent_version,
          tags: d.tags,
          inventory: JSON.stringify({ attributes: d.attributes, custom: d.custom, members: [] }),
        })
        .execute();
    }
    // another tenant's device matches every filter below and is never listed
    const other = await t.newTenant();
    await db
      .insertInto('devices')
      .values({
        tenant_id: other,
        name: 'f-other',
        status: 'online',
        tags: ['eu', 'us', 'pilot'],
        inventory: JSON.stringify({ attributes: { hw_model: 'gw-3' } }),
      })
      .execute();
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
  });

  const list = (filter: string, extra = '&limit=200') =>
    t.app.inject({ method: 'GET', url: `/api/v1/devices?filter=${encodeURIComponent(filter)}${extra}`, headers: viewer });

  it('each filter selects exactly the devices its documented meaning selects; total counts them; pages are slices', async () => {
    const filters = [
      'attributes.hw_model = "gw-3"',
      'attributes.hw_model = "gw-3" and tags has "eu"',
      'attributes.hw_model != "gw-3"',
      'attributes.hw_model ~ "GW"',
      'attributes.hw_model ~ "50%"',
      'attributes.hw_model ~ "_"',
      'agent_version < "2.4.0"',
      'agent_version >= 2.4',
      'agent_version > "2.4.0" and agent_version <= "10.0"',
      'attributes.staging_free_bytes > 9000',
      'attributes.staging_free_bytes <= "9000"',
      'not tags has "eu"',
      'tags has "pilot" or (status = "offline" and profile != "linux-arm64")',
      'custom.site = "o\'hare; --"',
      'custom.site ~ "; --"',
      'custom.site != "lyon" and not (name ~ "F-1" or name ~ "2")',
      'status != "decommissioned" and not not tags has "us"',
      'attributes.nothing = "x"',
      'attributes.nothing != "x"',
      'name = "f-07"',
      'profile = "linux-arm64" and agent_version = 10.0',
    ];
    for (const f of filters) {
      const want = devs.filter((d) => matches(parseFilter(f), d)).map((d) => d.name);
      const res = await list(f);
      expect(res.statusCode, `${f}: ${res.body}`).toBe(200);
      const body = res.json<{ devices: { name: string }[]; total: number; counts: Record<string, number> }>();
      expect(
        body.devices.map((d) => d.name),
        f,
      ).toEqual(want);
      expect(body.total, f).toBe(want.length);
      expect(body.counts).toEqual({ online: 20, offline: 20, decommissioned: 20 });
      const page = await list(f, '&limit=3&offset=2').then((r) => r.json<{ devices: { name: string }[] }>());
      expect(
        page.devices.map((d) => d.name),
        f,
      ).toEqual(want.slice(2, 5));
    }
    // a filter with the other parameters: all conditions hold
    const both = await list('tags has "eu"', '&limit=200&status=online&q=f-1&sort=-name').then((r) => r.json<{ devices: { name: string }[] }>());
    expect(both.devices.map((d) => d.name)).toEqual(
      devs
        .filter((d) => d.tags.includes('eu') && d.status === 'online' && d.name.includes('f-1'))
        .map((d) => d.name)
        .reverse(),
    );
  });

  it('hostile filters are a 400 naming filter (never a 500) and change nothing', async () => {
    const db = t.testStore.store.db;
    const fingerprint = async () =>
      (await sql<{ h: string }>`SELECT md5(string_agg(name || status || tags::text || inventory::text, ',' ORDER BY name)) AS h FROM devices`.execute(db))
        .rows[0]!.h;
    const before = await fingerprint();
    const hostile = [
      `name = "x"; DELETE FROM devices; --`,
      `name = "x" or 1=1`,
      `name = ""; DROP TABLE devices; --"`,
      `attributes.a'b = "x"`,
      `custom.x = "\\"; DELETE FROM devices; --`,
      `name = "x" /* */`,
      `name = "x" -- trailing`,
      `nаme = "cyrillic a"`,
      `name = "x"\u202e`,
      `name = "\u2028"`,
      `name = "x" ${'and name = "y" '.repeat(40)}`,
      `${'('.repeat(50)}name = "x"${')'.repeat(50)}`,
      `${'not '.repeat(50)}name = "x"`,
      'x'.repeat(SERVER_LIMITS.devices.filterChars + 1),
      `name = "${'%'.repeat(10)}`,
      `tags has "eu" and tags has "'; SELECT pg_sleep(10); --"`,
      `status = "online" union select * from users`,
      `attributes.hw_model = "gw-3" and`,
      `()`,
      `"just a string"`,
      `=`,
    ];
    for (const h of hostile) {
      const res = await list(h);
      expect(res.statusCode, `${h.slice(0, 60)}: ${res.body}`).toBe(400);
      expect(res.json<{ error: string }>().error, h.slice(0, 60)).toMatch(/^filter: column \d+: /);
    }
    // values that are hostile but valid are plain text: they match nothing and run as parameters
    for (const v of [`"x') OR ('1'='1"`, `"x'; DELETE FROM devices; --"`, `"%"`, `"\\\\"`, `"😀"`, `"\\""`]) {
      for (const f of [`name = ${v}`, `attributes.hw_model ~ ${v}`, `custom.site != ${v}`, `agent_version < ${v}`]) {
        const res = await list(f);
        expect(res.statusCode, `${f}: ${res.body}`).toBe(200);
      }
    }
    expect(await fingerprint()).toBe(before);
  });

  it('a viewer may filter; a filter never reaches another tenant', async () => {
    const res = await list('tags has "pilot"');
    expect(res.json<{ devices: { name: string }[] }>().devices.every((d) => d.name !== 'f-other')).toBe(true);
  });
});
