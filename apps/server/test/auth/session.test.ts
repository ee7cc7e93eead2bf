import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_PERMISSIONS } from '../../src/auth/permissions.js';
import { createTestApp, TEST_PASSWORD, type TestApp } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';

describe.each(availableDrivers())('auth sessions on %s', (driver) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(driver);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('login answers 204 with an httpOnly SameSite=Strict cookie; me names the identity', async () => {
    const user = await t.createUser('operator');
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: TEST_PASSWORD } });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/svc_session=/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Max-Age=\d+/);
    expect(setCookie).not.toMatch(/Secure/); // plain HTTP here
    const cookie = `svc_session=${res.cookies[0]!.value}`;
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ email: user.email, role: 'operator', tenant_id: t.tenantId, credential: 'session' });
    expect(me.json().permissions).toEqual([...ROLE_PERMISSIONS.operator]);
  });

  it('the session is stored only as a hash', async () => {
    const { cookie } = await t.loginAs('viewer');
    const token = cookie.split('=')[1]!;
    const rows = await t.testStore.store.db.selectFrom('sessions').select('token_hash').execute();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.token_hash === token)).toBe(false);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash))).toBe(true);
  });

  it('wrong password and unknown email are the same 401', async () => {
    const user = await t.createUser('viewer');
    const a = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: 'nope' } });
    const b = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody@example.test', password: 'nope' } });
    expect(a.statusCode).toBe(401);
    expect(b.statusCode).toBe(401);
    expect(a.json()).toEqual(b.json());
    expect(a.json()).toEqual({ error: 'email or password is incorrect' });
  });

  it('login body: missing field, unknown field and wrong type are 400s naming the field', async () => {
    const missing = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.c' } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatch(/password/);
    const unknown = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.c', password: 'x', admin: true } });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error).toMatch(/admin/);
    const wrongType = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 42, password: 'x' } });
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.json().error).toMatch(/email/);
  });

  it('logout revokes the session server-side; the old cookie then gets 401', async () => {
    const { cookie } = await t.loginAs('admin');
    const out = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie, 'x-svc-csrf': '1' } });
    expect(out.statusCode).toBe(204);
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie } });
    expect(me.statusCode).toBe(401);
    expect(me.json().error).toMatch(/session/);
  });

  it('an expired session is refused', async () => {
    const user = await t.createUser('viewer');
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: TEST_PASSWORD } });
    const cookie = `svc_session=${res.cookies[0]!.value}`;
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie } })).statusCode).toBe(200);
    t.clock.advance(13 * 3600 * 1000);
    try {
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie } })).statusCode).toBe(401);
    } finally {
      t.clock.advance(-13 * 3600 * 1000);
    }
  });

  it('no credential: 401 with an error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: expect.stringMatching(/authentication required/) });
  });

  it('a garbage bearer or cookie is 401, never 500', async () => {
    for (const headers of [
      { authorization: 'Bearer x' },
      { authorization: 'Basic abc' },
      { authorization: `Bearer svck_${'a'.repeat(40)}` },
      { cookie: "svc_session=';drop table users;--" },
    ]) {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers });
      expect(res.statusCode, JSON.stringify(headers)).toBe(401);
    }
  });
});
