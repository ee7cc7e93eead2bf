import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isServerError } from '../../../src/errors/server-error.js';
import { consumeEnrollToken } from '../../../src/resources/enroll-tokens/queries.js';
import { openStore } from '../../../src/store/open.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { availableDrivers } from '../../helpers/store.js';

describe.each(availableDrivers())('enrollment tokens on %s', (driver) => {
  let t: TestApp;
  let operator: { cookie: string };
  const create = async (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: operator, payload });

  beforeAll(async () => {
    t = await createTestApp(driver);
    operator = await t.loginAs('operator');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('create shows the secret once; list never shows it; only a hash is stored', async () => {
    const res = await create({ name: 'line 4', max_uses: 3, ttl_seconds: 3600 });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ name: 'line 4', max_uses: 3, uses: 0 });
    expect(body.token).toMatch(/^svce_/);
    expect(new Date(body.expires_at).getTime() - t.clock.now().getTime()).toBe(3600 * 1000);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/enroll-tokens', headers: operator });
    expect(list.body).not.toContain(body.token);
    expect(list.json().enroll_tokens.map((x: { id: string }) => x.id)).toContain(body.id);
    const row = await t.testStore.store.db.selectFrom('enroll_tokens').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(body.token);
  });

  it('consumeEnrollToken returns the tenant, counts uses and refuses when spent', async () => {
    const { token } = (await create({ max_uses: 2 })).json();
    const db = t.testStore.store.db;
    expect(await consumeEnrollToken(db, token, t.clock.now())).toMatchObject({ tenantId: t.tenantId });
    await consumeEnrollToken(db, token, t.clock.now());
    await expect(consumeEnrollToken(db, token, t.clock.now())).rejects.toSatisfy((e) => isServerError(e, 'ENROLL_TOKEN_EXHAUSTED'));
    await expect(consumeEnrollToken(db, 'svce_00000000_unknownunknownunknown', t.clock.now())).rejects.toSatisfy((e) =>
      isServerError(e, 'ENROLL_TOKEN_INVALID'),
    );
    await expect(consumeEnrollToken(db, "'; select 1; --", t.clock.now())).rejects.toSatisfy((e) => isServerError(e, 'ENROLL_TOKEN_INVALID'));
  });

  it('expiry is checked against the given time', async () => {
    const { token } = (await create({ ttl_seconds: 60 })).json();
    const later = new Date(t.clock.now().getTime() + 61_000);
    await expect(consumeEnrollToken(t.testStore.store.db, token, later)).rejects.toSatisfy((e) => isServerError(e, 'ENROLL_TOKEN_EXPIRED'));
  });

  it('concurrent consumers (two stores, like two processes) never exceed max_uses', async () => {
    const { token } = (await create({ max_uses: 5 })).json();
    const second = await openStore(t.testStore.openOptions);
    try {
      const attempts = Array.from({ length: 20 }, (_, i) =>
        consumeEnrollToken(i % 2 ? second.db : t.testStore.store.db, token, t.clock.now()).then(
          () => 'ok',
          (e) => (isServerError(e) ? e.code : String(e)),
        ),
      );
      const results = await Promise.all(attempts);
      expect(results.filter((r) => r === 'ok')).toHaveLength(5);
      expect(results.filter((r) => r === 'ENROLL_TOKEN_EXHAUSTED')).toHaveLength(15);
    } finally {
      await second.close();
    }
  });

  it('delete: 204, then 404; another tenant cannot delete; viewer cannot create', async () => {
    const { id } = (await create({})).json();
    const otherOp = await t.loginAs('operator', await t.newTenant());
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/enroll-tokens/${id}`, headers: otherOp })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/enroll-tokens/${id}`, headers: operator })).statusCode).toBe(204);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/enroll-tokens/${id}`, headers: operator })).statusCode).toBe(404);
    const viewer = await t.loginAs('viewer');
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: viewer, payload: {} })).json()).toEqual({
      error: 'missing permission: enroll-tokens.write',
    });
  });

  it('each token carries its status at the server clock, computed by the rule of the counts', async () => {
    const tenant = await t.newTenant();
    const op = await t.loginAs('operator', tenant);
    const make = async (payload: Record<string, unknown>) => {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: op, payload });
      expect(res.statusCode, res.body).toBe(201);
      return res.json<{ id: string; token: string; status: string }>();
    };
    const fresh = await make({ name: 'fresh', max_uses: 2, ttl_seconds: 3600 });
    expect(fresh.status).toBe('active');
    const spent = await make({ name: 'spent', max_uses: 1, ttl_seconds: 3600 });
    await consumeEnrollToken(t.testStore.store.db, spent.token, t.clock.now());
    // used up and then expired: expired wins, as enrollment reports it
    const spentThenExpired = await make({ name: 'spent-then-expired', max_uses: 1, ttl_seconds: 60 });
    await consumeEnrollToken(t.testStore.store.db, spentThenExpired.token, t.clock.now());
    await make({ name: 'short', max_uses: 5, ttl_seconds: 60 });
    t.clock.set(new Date(t.clock.now().getTime() + 60_000)); // expires_at <= now: expired
    const list = (await t.app.inject({ method: 'GET', url: '/api/v1/enroll-tokens', headers: op })).json();
    const byName = Object.fromEntries(list.enroll_tokens.map((x: { name: string; status: string }) => [x.name, x.status]));
    expect(byName).toEqual({ fresh: 'active', spent: 'exhausted', 'spent-then-expired': 'expired', short: 'expired' });
    const tally = { active: 0, expired: 0, exhausted: 0 } as Record<string, number>;
    for (const x of list.enroll_tokens as { status: string }[]) tally[x.status]! += 1;
    expect(list.counts).toEqual(tally);
    const viewer = await t.loginAs('viewer', tenant);
    const seen = (await t.app.inject({ method: 'GET', url: '/api/v1/enroll-tokens', headers: viewer })).json();
    expect(seen.enroll_tokens.map((x: { status: string }) => x.status)).toEqual(list.enroll_tokens.map((x: { status: string }) => x.status));
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/enroll-tokens', headers: op, payload: { name: 'x', max_uses: 0 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatch(/max_uses/);
  });
});
