import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, TEST_PASSWORD, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';

describe.each(availableDrivers())('users, profile and branding on %s', (driver) => {
  let t: TestApp;
  let admin: { cookie: string };
  beforeAll(async () => {
    t = await createTestApp(driver);
    admin = await t.loginAs('admin');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('admin creates, lists and deletes users; the new user can log in; duplicates conflict', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: admin,
      payload: { email: 'new@example.test', password: 'longenough', role: 'viewer' },
    });
    expect(created.statusCode).toBe(201);
    const user = created.json();
    expect(user).toMatchObject({ email: 'new@example.test', role: 'viewer' });
    expect(JSON.stringify(user)).not.toMatch(/password|scrypt/);
    const dup = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: admin,
      payload: { email: 'NEW@example.test', password: 'longenough', role: 'viewer' },
    });
    expect(dup.statusCode).toBe(409);
    const login = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'new@example.test', password: 'longenough' } });
    expect(login.statusCode).toBe(204);
    const list = (await t.app.inject({ method: 'GET', url: '/api/v1/users', headers: admin })).json();
    expect(list.users.map((u: { email: string }) => u.email)).toContain('new@example.test');
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/users/${user.id}`, headers: admin })).statusCode).toBe(204);
    const cookie = `svc_session=${login.cookies[0]!.value}`;
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie } })).statusCode).toBe(401);
    const short = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: admin,
      payload: { email: 'a@example.test', password: 'short', role: 'viewer' },
    });
    expect(short.statusCode).toBe(400);
    expect(short.json().error).toMatch(/password/);
  });

  it('profile: read and patch display name; password change needs the current password', async () => {
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: admin });
    expect(me.statusCode).toBe(200);
    const patched = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/profile',
      headers: { ...admin, prefer: 'return=representation' },
      payload: { display_name: 'Ada' },
    });
    expect(patched.json()).toMatchObject({ display_name: 'Ada' });
    const wrong = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/profile',
      headers: admin,
      payload: { new_password: 'another-password', current_password: 'nope' },
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error).toMatch(/^current_password/);
    const ok = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/profile',
      headers: admin,
      payload: { new_password: 'another-password', current_password: TEST_PASSWORD },
    });
    expect(ok.statusCode).toBe(204);
    const email = me.json().email;
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: 'another-password' } })).statusCode).toBe(204);
  });

  it('branding: defaults, admin PUT, viewer GET, bad color and oversized logo refused', async () => {
    const viewer = await t.loginAs('viewer');
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/admin/branding', headers: viewer })).json()).toMatchObject({
      company_name: '',
      logo_data_url: null,
    });
    const logo = `data:image/png;base64,${Buffer.from('png-bytes').toString('base64')}`;
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/admin/branding',
      headers: admin,
      payload: { company_name: 'Acme', primary_color: '#112233', accent_color: '#445566', logo_data_url: logo },
    });
    expect(put.statusCode).toBe(204);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/admin/branding', headers: viewer })).json()).toMatchObject({
      company_name: 'Acme',
      logo_data_url: logo,
    });
    expect((await t.app.inject({ method: 'PUT', url: '/api/v1/admin/branding', headers: viewer, payload: {} })).json()).toEqual({
      error: 'missing permission: admin.manage',
    });
    const badColor = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/admin/branding',
      headers: admin,
      payload: { company_name: 'Acme', primary_color: 'red', accent_color: '#445566', logo_data_url: null },
    });
    expect(badColor.statusCode).toBe(400);
    expect(badColor.json().error).toMatch(/primary_color/);
    const huge = `data:image/png;base64,${'A'.repeat(300 * 1024)}`;
    const big = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/admin/branding',
      headers: admin,
      payload: { company_name: 'Acme', primary_color: '#112233', accent_color: '#445566', logo_data_url: huge },
    });
    expect(big.statusCode).toBe(400);
    expect(big.json().error).toMatch(/logo_data_url/);
  });

  // spec §7: 204 for updates; RFC 7240: the representation only when the client prefers it
  it.each([
    { name: 'PATCH /profile', method: 'PATCH', url: '/api/v1/profile', payload: { display_name: 'Grace' }, shows: { display_name: 'Grace' } },
    {
      name: 'PUT /admin/branding',
      method: 'PUT',
      url: '/api/v1/admin/branding',
      payload: { company_name: 'Initech', primary_color: '#000000', accent_color: '#ffffff', logo_data_url: null },
      shows: { company_name: 'Initech', logo_data_url: null, updated_at: expect.stringMatching(/Z$/) },
    },
  ] as const)('$name answers 204 without a body, 200 with the updated resource on Prefer: return=representation', async ({ method, url, payload, shows }) => {
    const plain = await t.app.inject({ method, url, headers: admin, payload });
    expect(plain.statusCode, plain.body).toBe(204);
    expect(plain.body).toBe('');
    expect(plain.headers['preference-applied']).toBeUndefined();
    const preferred = await t.app.inject({ method, url, headers: { ...admin, prefer: 'respond-async, return=representation' }, payload });
    expect(preferred.statusCode, preferred.body).toBe(200);
    expect(preferred.headers['preference-applied']).toBe('return=representation');
    expect(preferred.json()).toMatchObject(shows);
    const minimal = await t.app.inject({ method, url, headers: { ...admin, prefer: 'return=minimal' }, payload });
    expect(minimal.statusCode).toBe(204);
  });
});
