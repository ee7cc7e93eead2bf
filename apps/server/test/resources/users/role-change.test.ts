/**
 * PATCH /users/{id} {role}: admin sessions only (an API key, even an admin's, is refused),
 * audited, and a tenant keeps at least one admin (409 naming the rule).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, TEST_PASSWORD, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';

describe.each(availableDrivers())('user role change on %s', (driver) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(driver);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  const patch = (id: string, payload: unknown, headers: Record<string, string>) =>
    t.app.inject({ method: 'PATCH', url: `/api/v1/users/${id}`, headers, payload: payload as Record<string, unknown> });
  const login = async (email: string) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } });
    expect(res.statusCode).toBe(204);
    return { cookie: `svc_session=${res.cookies.find((c) => c.name === 'svc_session')!.value}`, 'x-svc-csrf': '1' };
  };

  it('an admin changes a role (204, or 200 with the user); the change takes effect on the next request; audited', async () => {
    const tenant = await t.newTenant();
    const admin = await t.loginAs('admin', tenant);
    const user = await t.createUser('viewer', tenant);
    const userSession = await login(user.email);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/users', headers: userSession })).statusCode).toBe(403);

    const plain = await patch(user.id, { role: 'operator' }, admin);
    expect(plain.statusCode, plain.body).toBe(204);
    const rep = await patch(user.id, { role: 'admin' }, { ...admin, prefer: 'return=representation' });
    expect(rep.statusCode).toBe(200);
    expect(rep.json()).toMatchObject({ id: user.id, email: user.email, role: 'admin' });
    // sessions read the role at every request: the same session is an admin now
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/users', headers: userSession })).statusCode).toBe(200);
    // the same role again: nothing to record
    expect((await patch(user.id, { role: 'admin' }, admin)).statusCode).toBe(204);

    const events = (await t.app.inject({ method: 'GET', url: '/api/v1/audit?action=user.role.change', headers: admin })).json().events;
    expect(events.map((e: { target: string; detail: unknown }) => [e.target, e.detail])).toEqual([
      [`user:${user.id}`, { email: user.email, from: 'operator', to: 'admin' }],
      [`user:${user.id}`, { email: user.email, from: 'viewer', to: 'operator' }],
    ]);
  });

  it('the last admin cannot be demoted (409 naming the rule); with a second admin they can', async () => {
    const tenant = await t.newTenant();
    const only = await t.createUser('admin', tenant);
    const session = await login(only.email);
    const refused = await patch(only.id, { role: 'viewer' }, session);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toBe(`role: ${only.email} is the last admin of the tenant; a tenant keeps at least one admin (make another user admin first)`);
    const other = await t.createUser('operator', tenant);
    expect((await patch(other.id, { role: 'admin' }, session)).statusCode).toBe(204);
    expect((await patch(only.id, { role: 'viewer' }, session)).statusCode).toBe(204);
    // the demoted session is a viewer now; the remaining admin is the last one
    expect((await patch(other.id, { role: 'viewer' }, session)).statusCode).toBe(403);
    expect((await patch(other.id, { role: 'viewer' }, await login(other.email))).statusCode).toBe(409);
  });

  it('refuses bad input naming the field, API keys, non-admins and other tenants', async () => {
    const admin = await t.loginAs('admin');
    const user = await t.createUser('viewer');
    const bad = await patch(user.id, { role: 'owner' }, admin);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/role/);
    const extra = await patch(user.id, { role: 'operator', email: 'x@example.test' }, admin);
    expect(extra.statusCode).toBe(400);
    expect(extra.json().error).toMatch(/email/);
    expect((await patch(user.id, {}, admin)).statusCode).toBe(400);
    const badId = await patch('not-a-uuid', { role: 'operator' }, admin);
    expect(badId.statusCode).toBe(400);
    expect(badId.json().error).toMatch(/id/);
    expect((await patch('00000000-0000-4000-8000-000000000000', { role: 'operator' }, admin)).statusCode).toBe(404);

    const adminKey = await t.apiKeyHeaders('admin');
    const byKey = await patch(user.id, { role: 'admin' }, adminKey);
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().error).toMatch(/session credential required/);
    for (const role of ['viewer', 'operator'] as const) {
      const res = await patch(user.id, { role: 'admin' }, await t.loginAs(role));
      expect(res.json()).toEqual({ error: 'missing permission: users.manage' });
    }
    const otherAdmin = await t.loginAs('admin', await t.newTenant());
    expect((await patch(user.id, { role: 'admin' }, otherAdmin)).statusCode).toBe(404);
    expect(
      (await t.app.inject({ method: 'GET', url: '/api/v1/users?limit=200', headers: admin })).json().users.find((u: { id: string }) => u.id === user.id).role,
    ).toBe('viewer');
  });
});
