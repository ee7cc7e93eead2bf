import 'reflect-metadata';
import type { CheckInResponse, EnrollResponse, Inventory } from '@svc/device-proto';
import { encodePem, LIMITS } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  channelCredentials,
  clientsFor,
  csrFor,
  newDeviceKey,
  refusal,
  startChannelFixture,
  unary,
  type ChannelFixture,
} from '../../fixtures/device-channel.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';
import { SERVER_LIMITS } from '../../../src/limits.js';

const ATTRS = {
  attributes: { hw_model: 'gw-3', arch: 'arm64', os_id: 'debian', os_version: '12', kernel: '6.1.0', agent_version: '2.3.1', staging_free_bytes: '1048576' },
  custom: { site: 'lyon', line: '3' },
  members: [{ component: 'app', version: '1.2.0', digest: 'sha256:' + 'a'.repeat(64) }],
};

/**
 * Inventory over the real device channel (docs/inventory.md): attributes reported at
 * enrollment and when they change are stored and shown by GET /devices/{name}; a check-in
 * without attributes keeps them; every bound refuses with INVALID_ARGUMENT naming the
 * attribute. Tags: PUT/DELETE /devices/{name}/tags/{tag}, idempotent, audited when they change.
 */
describe.each(availableDrivers())('device inventory and tags on %s', (driver) => {
  let f: ChannelFixture;
  let t: TestApp;
  let admin: { authorization: string };
  let viewer: { authorization: string };
  beforeAll(async () => {
    f = await startChannelFixture(driver);
    t = await createTestApp(driver, { shareWith: f.t });
    admin = await t.apiKeyHeaders('admin');
    viewer = await t.apiKeyHeaders('viewer');
  }, 60_000);
  afterAll(async () => {
    await t?.dispose();
    await f?.dispose();
  });

  const base = { agentVersion: '2.3.1', profile: 'linux-arm64', product: 'edge', slots: [] };
  async function device(name: string, attributes: Inventory['attributes']) {
    const key = await newDeviceKey();
    const anon = clientsFor(f.addr, channelCredentials(f.serverCaPem));
    const res = await unary<EnrollResponse>(async (cb) =>
      anon.enrollment.enroll(
        { token: await f.newToken({ tenantId: t.tenantId }), deviceName: name, csrDer: await csrFor(key, name), inventory: { ...base, attributes } },
        cb,
      ),
    ).finally(() => anon.close());
    const c = clientsFor(f.addr, channelCredentials(f.serverCaPem, { keyPem: key.keyPem, certPem: encodePem(res.certificateDer, 'CERTIFICATE') }));
    return { c, checkIn: (a: Inventory['attributes']) => unary<CheckInResponse>((cb) => c.device.checkIn({ inventory: { ...base, attributes: a } }, cb)) };
  }
  const get = async (name: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/devices/${name}`, headers: viewer });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ inventory: typeof ATTRS; tags: string[] }>();
  };

  it('attributes reported at enrollment are stored; a check-in without them keeps them; a changed set replaces them at once', async () => {
    const d = await device('inv-a', ATTRS);
    try {
      expect((await get('inv-a')).inventory).toEqual(ATTRS);
      await d.checkIn(undefined);
      expect((await get('inv-a')).inventory).toEqual(ATTRS);
      const changed = { ...ATTRS, attributes: { ...ATTRS.attributes, os_version: '13' }, custom: { site: 'paris' } };
      await d.checkIn(changed);
      // written by the check-in itself (not the coalesced last_seen buffer)
      expect((await get('inv-a')).inventory).toEqual(changed);
    } finally {
      d.c.close();
    }
  });

  it('a device that never reported attributes shows an empty inventory', async () => {
    const d = await device('inv-empty', undefined);
    d.c.close();
    expect((await get('inv-empty')).inventory).toEqual({ attributes: {}, custom: {}, members: [] });
  });

  it('every bound refuses with INVALID_ARGUMENT naming the attribute, and stores nothing', async () => {
    const d = await device('inv-bounds', ATTRS);
    try {
      const many = Object.fromEntries(Array.from({ length: LIMITS.inventoryCustomAttributes + 1 }, (_, i) => [`k${i}`, 'v']));
      const cases: [Inventory['attributes'], string][] = [
        [{ ...ATTRS, custom: many }, 'inventory.attributes.custom: more than'],
        [{ ...ATTRS, custom: { 'Bad-Key': 'x' } }, 'inventory.attributes.custom."Bad-Key"'],
        [{ ...ATTRS, custom: { 'a.b': 'x' } }, 'inventory.attributes.custom."a.b"'],
        [{ ...ATTRS, custom: { site: 'x'.repeat(LIMITS.inventoryValueChars + 1) } }, 'inventory.attributes.custom.site: longer than'],
        [{ ...ATTRS, attributes: { hw_model: 'x'.repeat(LIMITS.inventoryValueChars + 1) } }, 'inventory.attributes.attributes.hw_model: longer than'],
        [
          { ...ATTRS, members: Array.from({ length: LIMITS.inventoryMembers + 1 }, (_, i) => ({ component: `c${i}`, version: '1', digest: 'd' })) },
          'inventory.attributes.members: more than',
        ],
        [{ ...ATTRS, members: [{ component: 'Bad Name', version: '1', digest: 'd' }] }, 'inventory.attributes.members[0].component'],
      ];
      for (const [attributes, field] of cases) {
        const r = await refusal(d.checkIn(attributes));
        expect(r.svcCode, field).toBe('INVALID_INPUT');
        expect(r.details, field).toContain(field);
      }
      expect((await get('inv-bounds')).inventory).toEqual(ATTRS);
    } finally {
      d.c.close();
    }
  });

  it('tags: PUT adds (idempotent), DELETE removes (idempotent), each change audited once; bounds and permissions', async () => {
    const d = await device('inv-tags', undefined);
    d.c.close();
    const call = (method: 'PUT' | 'DELETE', tag: string, headers = admin, name = 'inv-tags') =>
      t.app.inject({ method, url: `/api/v1/devices/${name}/tags/${encodeURIComponent(tag)}`, headers });
    expect((await call('PUT', 'eu')).json()).toEqual({ name: 'inv-tags', tags: ['eu'] });
    expect((await call('PUT', 'eu')).json()).toEqual({ name: 'inv-tags', tags: ['eu'] });
    expect((await call('PUT', 'line:3')).json()).toEqual({ name: 'inv-tags', tags: ['eu', 'line:3'] });
    expect((await get('inv-tags')).tags).toEqual(['eu', 'line:3']);
    expect((await call('DELETE', 'eu')).json()).toEqual({ name: 'inv-tags', tags: ['line:3'] });
    expect((await call('DELETE', 'eu')).json()).toEqual({ name: 'inv-tags', tags: ['line:3'] });
    const audit = await t.testStore.store.db
      .selectFrom('audit_events')
      .select(['action', 'detail'])
      .where('target', '=', 'device:inv-tags')
      .where('action', 'like', 'device.tag.%')
      .orderBy('seq')
      .execute();
    expect(audit.map((a) => [a.action, (typeof a.detail === 'string' ? JSON.parse(a.detail) : a.detail) as unknown])).toEqual([
      ['device.tag.add', { tag: 'eu' }],
      ['device.tag.add', { tag: 'line:3' }],
      ['device.tag.remove', { tag: 'eu' }],
    ]);
    for (const bad of ['EU', 'a b', "x';--", 'é']) {
      const res = await call('PUT', bad);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json<{ error: string }>().error, bad).toMatch(/^tag: /);
    }
    expect((await call('PUT', 'eu', viewer)).statusCode).toBe(403);
    expect((await call('PUT', 'eu', admin, 'no-such-device')).statusCode).toBe(404);
    for (let i = 1; i < SERVER_LIMITS.devices.tagsPerDevice; i++) expect((await call('PUT', `t${i}`)).statusCode).toBe(200);
    const over = await call('PUT', 'one-too-many');
    expect(over.statusCode).toBe(400);
    expect(over.json<{ error: string }>().error).toMatch(/^tag: .*32 tags/);
  });
});
