import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';

describe.each(availableDrivers())('API keys on %s', (driver) => {
  let t: TestApp;
  let admin: { cookie: string };
  beforeAll(async () => {
    t = await createTestApp(driver);
    admin = await t.loginAs('admin');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('create (session) -> 201 with the plaintext once; only a hash and prefix are stored', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: admin, payload: { name: 'ci', role: 'operator' } });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ name: 'ci', role: 'operator', last_used_at: null, revoked_at: null });
    expect(body.key).toMatch(/^svck_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$/);
    expect(body.key.startsWith(body.prefix)).toBe(true);
    const stored = await t.testStore.store.db.selectFrom('api_keys').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain(body.key);
    const list = (await t.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: admin })).json();
    expect(JSON.stringify(list)).not.toContain(body.key);
    expect(list.api_keys.map((k: { id: string }) => k.id)).toContain(body.id);
  });

  it('the key authenticates with its role; last_used_at is recorded; revoke -> 401', async () => {
    const created = (await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: admin, payload: { name: 'viewer-key', role: 'viewer' } })).json();
    const headers = { authorization: `Bearer ${created.key}` };
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers });
    expect(me.json()).toMatchObject({ role: 'viewer', tenant_id: t.tenantId, email: null, credential: 'api-key' });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers })).statusCode).toBe(200);
    const del = await t.app.inject({ method: 'DELETE', url: '/api/v1/devices/x1', headers });
    expect(del.json()).toEqual({ error: 'missing permission: devices.write' });
    const listed = (await t.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: admin }))
      .json()
      .api_keys.find((k: { id: string }) => k.id === created.id);
    expect(listed.last_used_at).not.toBeNull();
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/api-keys/${created.id}`, headers: admin })).statusCode).toBe(204);
    const after = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers });
    expect(after.statusCode).toBe(401);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/api-keys/${created.id}`, headers: admin })).statusCode).toBe(404);
  });

  it('a key revoked or deleted in SQL, not through the API, is refused at the next request (the cache hears the database)', async () => {
    for (const change of ['revoke', 'delete'] as const) {
      const created = (
        await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: admin, payload: { name: `sql-${change}`, role: 'viewer' } })
      ).json();
      const headers = { authorization: `Bearer ${created.key}` };
      // Twice: the second answer comes from the cache.
      for (let i = 0; i < 2; i++) expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers })).statusCode).toBe(200);
      const db = t.testStore.store.db;
      if (change === 'revoke') await db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', created.id).execute();
      else await db.deleteFrom('api_keys').where('id', '=', created.id).execute();
      // PostgreSQL delivers the notification on the listener's own connection: allow it a moment.
      const deadline = Date.now() + 2000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers })).statusCode;
        if (status === 200) await new Promise((r) => setTimeout(r, 20));
      }
      expect(status, change).toBe(401);
    }
  });

  it('an API key cannot mint keys or users (spec 5.3), even an admin key', async () => {
    const key = await t.apiKeyHeaders('admin');
    const mint = await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: key, payload: { name: 'x', role: 'admin' } });
    expect(mint.statusCode).toBe(403);
    expect(mint.json()).toEqual({ error: 'missing permission: api-keys.manage (session credential required)' });
    const user = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: key,
      payload: { email: 'x@example.test', password: 'password123', role: 'admin' },
    });
    expect(user.json()).toEqual({ error: 'missing permission: users.manage (session credential required)' });
    const count = await t.testStore.store.db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('email', '=', 'x@example.test')
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });

  it('an operator session cannot manage keys; bad role is a 400 naming the field', async () => {
    const op = await t.loginAs('operator');
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: op, payload: { name: 'x', role: 'viewer' } })).json()).toEqual({
      error: 'missing permission: api-keys.manage',
    });
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: admin, payload: { name: 'x', role: 'root' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/role/);
  });

  it("another tenant's key id is 404", async () => {
    const other = await t.newTenant();
    const otherAdmin = await t.loginAs('admin', other);
    const created = (await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers: admin, payload: { name: 'mine', role: 'viewer' } })).json();
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/api-keys/${created.id}`, headers: otherAdmin })).statusCode).toBe(404);
  });
});
