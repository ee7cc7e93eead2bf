import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';

describe.each(availableDrivers())('bad input is a 400 and writes nothing, on %s', (driver) => {
  let t: TestApp;
  let admin: { cookie: string };
  const countRows = async (table: 'enroll_tokens' | 'users' | 'api_keys' | 'audit_events') =>
    Number(
      (
        await t.testStore.store.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    t = await createTestApp(driver, { ctxOverrides: { bodyLimit: 64 * 1024 } });
    admin = await t.loginAs('admin');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  const cases: { name: string; url: string; body: string; contentType?: string; field: RegExp }[] = [
    { name: 'malformed JSON', url: '/api/v1/enroll-tokens', body: '{"name": ', field: /malformed JSON/ },
    { name: 'JSON that is not an object', url: '/api/v1/enroll-tokens', body: '[1,2]', field: /body/ },
    { name: 'wrong type', url: '/api/v1/enroll-tokens', body: '{"max_uses": "ten"}', field: /max_uses/ },
    { name: 'out of range', url: '/api/v1/enroll-tokens', body: '{"max_uses": 0}', field: /max_uses/ },
    {
      name: 'unknown field',
      url: '/api/v1/enroll-tokens',
      body: '{"name": "x", "tenant_id": "00000000-0000-4000-8000-000000000000"}',
      field: /^body\.tenant_id: unknown field$/,
    },
    { name: '__proto__ pollution', url: '/api/v1/enroll-tokens', body: '{"__proto__": {"admin": true}}', field: /body/ },
    {
      name: 'oversized body',
      url: '/api/v1/users',
      body: JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(100 * 1024), role: 'viewer' }),
      field: /too large/,
    },
    { name: 'wrong content type', url: '/api/v1/users', body: 'email=a', contentType: 'application/x-www-form-urlencoded', field: /body/ },
    { name: 'past expiry', url: '/api/v1/enroll-tokens', body: '{"expires_at": "2001-01-01T00:00:00Z"}', field: /expires_at/ },
    { name: 'bad email', url: '/api/v1/users', body: '{"email": "not-an-email", "password": "longenough", "role": "viewer"}', field: /email/ },
  ];

  for (const c of cases) {
    it(c.name, async () => {
      const before = await Promise.all([countRows('enroll_tokens'), countRows('users'), countRows('audit_events')]);
      const res = await t.app.inject({
        method: 'POST',
        url: c.url,
        headers: { ...admin, 'content-type': c.contentType ?? 'application/json' },
        payload: c.body,
      });
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(Object.keys(body)).toEqual(['error']);
      expect(body.error).toMatch(c.field);
      expect(body.error).not.toMatch(/\n/);
      expect(await Promise.all([countRows('enroll_tokens'), countRows('users'), countRows('audit_events')])).toEqual(before);
    });
  }

  it('a bad UUID in a path is a 400 naming the parameter', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/api/v1/enroll-tokens/not-a-uuid', headers: admin });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/id/);
  });

  it('unknown routes are a JSON 404', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/nope', headers: admin });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'route not found: GET /api/v1/nope' });
    // a long unknown path is echoed cut to 200 characters
    const long = await t.app.inject({ method: 'GET', url: `/api/v1/${'a'.repeat(10_000)}`, headers: admin });
    expect(long.statusCode).toBe(404);
    expect(long.json()).toEqual({ error: `route not found: GET ${`/api/v1/${'a'.repeat(10_000)}`.slice(0, 200)}...` });
  });
});
