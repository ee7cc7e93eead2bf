import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAuditRow } from '../../../src/resources/audit/queries.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';

describe.each(availableDrivers())('audit on %s', (driver) => {
  let t: TestApp;
  let admin: { cookie: string };
  beforeAll(async () => {
    t = await createTestApp(driver);
    admin = await t.loginAs('admin');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('state changes write events with actor, credential, tenant, action, target, time and request id', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: admin, payload: { name: 'line 1' } });
    expect(res.statusCode).toBe(201);
    const ev = await t.testStore.store.db.selectFrom('audit_events').selectAll().where('action', '=', 'enroll-token.create').executeTakeFirstOrThrow();
    expect(ev).toMatchObject({ tenant_id: t.tenantId, credential: 'session', target: `enroll-token:${res.json().id}` });
    expect(ev.actor).toMatch(/@example\.test$/);
    expect(ev.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(ev.at).toBeInstanceOf(Date);
  });

  it('the database refuses UPDATE, DELETE and TRUNCATE of audit events', async () => {
    const db = t.testStore.store.db;
    await expect(db.updateTable('audit_events').set({ actor: 'mallory' }).execute()).rejects.toThrow(/append-only/);
    await expect(db.deleteFrom('audit_events').execute()).rejects.toThrow(/append-only/);
    await expect(sql`TRUNCATE audit_events`.execute(db)).rejects.toThrow(/append-only/);
    const n = await db
      .selectFrom('audit_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(n.n)).toBeGreaterThan(0);
  });

  it('export streams JSON Lines, oldest first, only this tenant, across keyset batches', async () => {
    const db = t.testStore.store.db;
    const other = await t.newTenant();
    const row = { actor: 'system:test', credential: 'system', requestId: null, detail: {}, at: new Date() } as const;
    await insertAuditRow(db, { ...row, tenantId: other, action: 'other.tenant', target: 'x' });
    for (let i = 0; i < 1205; i++) {
      await insertAuditRow(db, { ...row, tenantId: t.tenantId, action: 'bulk.event', target: `n:${i}` });
    }
    const viewer = await t.loginAs('viewer');
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/audit/export', headers: viewer });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/jsonl/);
    const lines = res.body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    const bulk = lines.filter((l) => l.action === 'bulk.event');
    expect(bulk).toHaveLength(1205);
    expect(bulk.map((l) => l.target)).toEqual(Array.from({ length: 1205 }, (_, i) => `n:${i}`));
    expect(lines.every((l) => l.tenant_id === t.tenantId)).toBe(true);
    expect(lines[0]).toEqual(
      expect.objectContaining({
        id: expect.any(String),
        at: expect.stringMatching(/Z$/),
        actor: expect.any(String),
        credential: expect.any(String),
        request_id: expect.anything(),
      }),
    );
    const filtered = await t.app.inject({ method: 'GET', url: '/api/v1/audit/export?action=enroll-token.create', headers: viewer });
    expect(filtered.body.trimEnd().split('\n')).toHaveLength(1);
    const bad = await t.app.inject({ method: 'GET', url: '/api/v1/audit/export?since=yesterday', headers: viewer });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/since/);
  });

  it('the paginated list is newest first and tenant-scoped', async () => {
    const viewer = await t.loginAs('viewer');
    const body = (await t.app.inject({ method: 'GET', url: '/api/v1/audit?limit=2', headers: viewer })).json();
    expect(body.events).toHaveLength(2);
    expect(body.total).toBeGreaterThan(1205);
    expect(body.events[0].action).toBe('session.login');
  });
});
