import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, TEST_PASSWORD, type TestApp } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';

describe.each(availableDrivers())('CSRF header on cookie-authenticated writes on %s', (driver) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(driver);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  const tokenCount = async (headers: Record<string, string>) =>
    (await t.app.inject({ method: 'GET', url: '/api/v1/enroll-tokens', headers })).json<{ total: number }>().total;

  it('a write with the session cookie and no x-svc-csrf header is 403 and changes nothing', async () => {
    const { cookie } = await t.loginAs('operator');
    const before = await tokenCount({ cookie });
    for (const csrf of [undefined, '0', 'true', '']) {
      const headers = { cookie, ...(csrf === undefined ? {} : { 'x-svc-csrf': csrf }) };
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers, payload: { name: 'forged' } });
      expect(res.statusCode, String(csrf)).toBe(403);
      expect(res.json()).toEqual({ error: 'csrf: a write with the session cookie needs the header x-svc-csrf: 1' });
    }
    const patch = await t.app.inject({ method: 'PATCH', url: '/api/v1/profile', headers: { cookie }, payload: { display_name: 'forged' } });
    expect(patch.statusCode).toBe(403);
    const logout = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie } });
    expect(logout.statusCode).toBe(403);
    expect(await tokenCount({ cookie })).toBe(before);
    // the session survived the refused logout
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie } })).statusCode).toBe(200);
  });

  it('the same write with x-svc-csrf: 1 succeeds; reads need no header', async () => {
    const session = await t.loginAs('operator');
    expect(session['x-svc-csrf']).toBe('1');
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: session, payload: { name: 'real' } });
    expect(res.statusCode).toBe(201);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: { cookie: session.cookie } })).statusCode).toBe(200);
  });

  it('API-key writes are exempt (browsers never send an API key by themselves)', async () => {
    const key = await t.apiKeyHeaders('operator');
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: key, payload: { name: 'from a key' } });
    expect(res.statusCode).toBe(201);
  });

  it('login cannot be forged by a cross-site form: only a JSON body is accepted', async () => {
    const user = await t.createUser('viewer');
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', `email=${encodeURIComponent(user.email)}&password=${encodeURIComponent(TEST_PASSWORD)}`],
      ['text/plain', JSON.stringify({ email: user.email, password: TEST_PASSWORD })],
      ['multipart/form-data; boundary=x', `--x\r\nContent-Disposition: form-data; name="email"\r\n\r\n${user.email}\r\n--x--\r\n`],
    ] as const) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': type }, payload: body });
      expect(res.statusCode, type).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, type).toBeLessThan(500);
      expect(res.cookies, type).toEqual([]);
    }
  });
});
