import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, RouteWithoutPermissionError } from '../../src/app.js';
import { isPermission, ROLE_PERMISSIONS, PERMISSIONS } from '../../src/auth/permissions.js';
import type { V1Routes } from '../../src/http/context.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** Fill path parameters with plausible values so requests reach the auth hook. */
function concrete(url: string): string {
  return url.replace(/:id\b/g, '00000000-0000-4000-8000-000000000000').replace(/:[A-Za-z_]+/g, 'x1');
}

describe('every route declares a permission (covers routes other areas add)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('the collected routes all carry public or a known permission', () => {
    const routes = t.app.collectedRoutes;
    expect(routes.length).toBeGreaterThan(15);
    const bad = routes.filter((r) => r.permission !== 'public' && !isPermission(r.permission));
    expect(bad.map((r) => `${r.method} ${r.url}`)).toEqual([]);
    // The only public route is login.
    expect(routes.filter((r) => r.permission === 'public').map((r) => r.url)).toEqual(['/api/v1/auth/login']);
  });

  it('buildApp refuses a route without a permission', async () => {
    const rogue: V1Routes = async (app) => {
      app.get('/rogue', async () => ({ ok: true }));
    };
    await expect(buildApp(t.ctx, { extraRoutes: [rogue] })).rejects.toBeInstanceOf(RouteWithoutPermissionError);
  });

  it('every non-public route answers 401 without a credential', async () => {
    for (const r of t.app.collectedRoutes.filter((x) => x.permission !== 'public')) {
      const res = await t.app.inject({ method: r.method as 'GET', url: concrete(r.url) });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(401);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
  });

  it('a viewer gets 403 "missing permission: <name>" on every route needing a permission it lacks', async () => {
    const viewer = await t.loginAs('viewer');
    const lacking = t.app.collectedRoutes.filter((r) => r.permission !== 'public' && !ROLE_PERMISSIONS.viewer.includes(r.permission as never));
    expect(lacking.length).toBeGreaterThan(5);
    for (const r of lacking) {
      const res = await t.app.inject({
        method: r.method as 'GET',
        url: concrete(r.url),
        headers: viewer,
        payload: r.method === 'GET' || r.method === 'DELETE' ? undefined : {},
      });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(403);
      expect(res.json()).toEqual({ error: `missing permission: ${r.permission}` });
    }
  });

  it('viewer can only read: no write/manage permission in its role', () => {
    expect(ROLE_PERMISSIONS.viewer.filter((p) => !p.endsWith('.read') && p !== 'profile.write')).toEqual([]);
    expect(ROLE_PERMISSIONS.admin).toEqual([...PERMISSIONS]);
    expect(ROLE_PERMISSIONS.operator).not.toContain('users.manage');
    expect(ROLE_PERMISSIONS.operator).toContain('devices.write');
  });

  it('session-only routes refuse even an admin API key with 403 naming the permission', async () => {
    const key = await t.apiKeyHeaders('admin');
    const sessionOnly = t.app.collectedRoutes.filter((r) => r.sessionOnly);
    expect(sessionOnly.map((r) => `${r.method} ${r.url}`)).toEqual(expect.arrayContaining(['POST /api/v1/api-keys', 'POST /api/v1/users']));
    for (const r of sessionOnly) {
      const res = await t.app.inject({
        method: r.method as 'GET',
        url: concrete(r.url),
        headers: key,
        payload: r.method === 'POST' ? { name: 'k', role: 'admin' } : undefined,
      });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(403);
      expect(res.json().error).toBe(`missing permission: ${r.permission} (session credential required)`);
    }
  });

  it('openapi.json is OpenAPI 3.1 covering every collected route with its permission', async () => {
    const key = await t.apiKeyHeaders('viewer');
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: key });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    for (const r of t.app.collectedRoutes) {
      const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const op = doc.paths[path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${path}`).toBeDefined();
      expect(op['x-permission']).toBe(r.permission);
    }
    const list = doc.paths['/api/v1/devices'].get;
    expect(list.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['limit', 'offset', 'status', 'q']));
    expect(doc.paths['/api/v1/auth/login'].post.requestBody.content['application/json'].schema.required).toEqual(['email', 'password']);
  });
});
