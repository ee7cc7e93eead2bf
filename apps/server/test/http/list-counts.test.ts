import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consumeEnrollToken } from '../../src/resources/enroll-tokens/queries.js';
import { upsertEnrolledDevice } from '../../src/resources/devices/queries/identity.js';
import { insertAuditRow } from '../../src/resources/audit/queries.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';

/**
 * spec §8 `counts` on the platform's lists: each a breakdown computed by the database over the
 * caller's tenant (another tenant's rows are made first and never counted).
 */
describe.each(availableDrivers())('list counts of users, API keys, enrollment tokens, audit and device history on %s', (driver) => {
  let t: TestApp;
  let admin: { cookie: string };
  let other: string;
  const get = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: admin });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const post = async (url: string, payload: unknown) => {
    const res = await t.app.inject({ method: 'POST', url: `/api/v1${url}`, headers: admin, payload: payload as never });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };

  beforeAll(async () => {
    t = await createTestApp(driver);
    admin = await t.loginAs('admin');
    other = await t.newTenant();
    await t.createUser('viewer', other);
    await t.apiKeyHeaders('admin', other);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('users: counts by role over the tenant; total is their sum', async () => {
    const before = await get('/users');
    expect(before.counts).toEqual({ admin: 1, operator: 0, viewer: 0 });
    await t.createUser('viewer');
    await t.createUser('viewer');
    await t.createUser('operator');
    const after = await get('/users?limit=1');
    expect(after.counts).toEqual({ admin: 1, operator: 1, viewer: 2 });
    expect(after.total).toBe(4);
    expect(after.users).toHaveLength(1);
  });

  it('API keys: counts active and revoked', async () => {
    const a = await post('/api-keys', { name: 'a', role: 'viewer' });
    await post('/api-keys', { name: 'b', role: 'operator' });
    expect((await get('/api-keys')).counts).toEqual({ active: 2, revoked: 0 });
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/api-keys/${a.id}`, headers: admin })).statusCode).toBe(204);
    const body = await get('/api-keys?limit=1&offset=1');
    expect(body.counts).toEqual({ active: 1, revoked: 1 });
    expect(body.total).toBe(2);
  });

  it('enrollment tokens: counts active, expired and exhausted at the server clock (expired wins over exhausted)', async () => {
    const db = t.testStore.store.db;
    await post('/enroll-tokens', { name: 'long', ttl_seconds: 7200 });
    const short = await post('/enroll-tokens', { name: 'short', ttl_seconds: 60 });
    const once = await post('/enroll-tokens', { name: 'once', max_uses: 1, ttl_seconds: 7200 });
    await consumeEnrollToken(db, once.token, t.clock.now());
    expect((await get('/enroll-tokens')).counts).toEqual({ active: 2, expired: 0, exhausted: 1 });
    t.clock.advance(120_000);
    expect((await get('/enroll-tokens')).counts).toEqual({ active: 1, expired: 1, exhausted: 1 });
    t.clock.advance(3 * 3600_000);
    const late = await get('/enroll-tokens');
    expect(late.counts).toEqual({ active: 0, expired: 3, exhausted: 0 });
    expect(late.total).toBe(3);
    expect(late.enroll_tokens.map((x: { id: string }) => x.id)).toContain(short.id);
  });

  it('audit: counts by action in the since/until window; the action filter narrows total, not counts', async () => {
    const db = t.testStore.store.db;
    const at = new Date('2020-01-01T00:00:00Z');
    const row = { tenantId: t.tenantId, actor: 'system:test', credential: 'system', requestId: null, detail: {} } as const;
    await insertAuditRow(db, { ...row, action: 'old.event', target: 'x:1', at });
    await insertAuditRow(db, { ...row, action: 'old.event', target: 'x:2', at });
    await insertAuditRow(db, { ...row, tenantId: other, action: 'old.event', target: 'x:3', at });
    const all = await get('/audit');
    expect(all.counts['old.event']).toBe(2);
    expect(all.counts['api-key.create']).toBe(2);
    expect(all.counts['api-key.revoke']).toBe(1);
    expect(all.counts['enroll-token.create']).toBe(3);
    expect(all.total).toBe(Object.values(all.counts as Record<string, number>).reduce((a, b) => a + b, 0));
    const window = await get(`/audit?until=${encodeURIComponent('2021-01-01T00:00:00Z')}`);
    expect(window.counts).toEqual({ 'old.event': 2 });
    expect(window.total).toBe(2);
    const one = await get('/audit?action=api-key.create&limit=1');
    expect(one.total).toBe(2);
    expect(one.events).toHaveLength(1);
    expect(one.counts).toEqual(all.counts);
    expect((await get('/audit?action=no.such.action')).total).toBe(0);
  });

  it("device history: counts by event over the device's whole history", async () => {
    const db = t.testStore.store.db;
    await upsertEnrolledDevice(db, { tenantId: t.tenantId, name: 'hist-1', certFingerprint: 'sha256:1', certNotAfter: null, now: t.clock.now() });
    t.clock.advance(1000);
    await upsertEnrolledDevice(db, { tenantId: t.tenantId, name: 'hist-1', certFingerprint: 'sha256:2', certNotAfter: null, now: t.clock.now() });
    t.clock.advance(1000);
    expect((await t.app.inject({ method: 'DELETE', url: '/api/v1/devices/hist-1', headers: admin })).statusCode).toBe(204);
    const body = await get('/devices/hist-1/history?limit=1');
    expect(body.counts).toEqual({ enrolled: 2, decommissioned: 1 });
    expect(body.total).toBe(3);
    expect(body.history).toEqual([expect.objectContaining({ event: 'decommissioned' })]);
  });
});
