import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { openStore, type Store } from '../src/store/open.js';
import { bootstrapAdmin } from '../src/resources/tenants/bootstrap.js';
import { ensureDefaultTenant } from '../src/resources/tenants/queries.js';
import { testConfig } from './helpers/app.js';
import { createTestStore, type TestStore } from './helpers/store.js';

/**
 * Two server instances, each with its OWN store (own connection pool), on ONE PostgreSQL
 * schema, both listening on real loopback ports: they must behave as one service
 * (sessions, data and counts live only in the database).
 */
const pgUrl = process.env.SVC_TEST_DATABASE_URL;
if (!pgUrl && process.env.CI === 'true') throw new Error('platform-two-processes: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('platform-two-processes: SVC_TEST_DATABASE_URL not set; the two-process test needs PostgreSQL and is skipped');

/** Polls until `url` answers `want` or `ms` pass; returns the last status. */
async function statusWithin(url: string, headers: Record<string, string>, want: number, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const status = (await fetch(url, { headers })).status;
    if (status === want || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!pgUrl)('two server processes on one PostgreSQL', () => {
  let shared: TestStore;
  const stores: Store[] = [];
  const apps: FastifyInstance[] = [];
  const urls: string[] = [];

  beforeAll(async () => {
    shared = await createTestStore('postgres');
    for (let i = 0; i < 2; i++) {
      const store = await openStore(shared.openOptions);
      const tenant = await ensureDefaultTenant(store.db);
      await bootstrapAdmin(store.db, tenant, { email: 'root@example.test', password: 'password123' });
      const app = await buildApp({ store, config: testConfig(), now: () => new Date(), logger: false });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const addr = app.server.address();
      if (addr === null || typeof addr === 'string') throw new Error('no port');
      stores.push(store);
      apps.push(app);
      urls.push(`http://127.0.0.1:${addr.port}/api/v1`);
    }
  });
  /** Logs in on A and creates a viewer API key there. */
  async function viewerKeyOnA(name: string) {
    const login = await fetch(`${urls[0]}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.test', password: 'password123' }),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const created = await fetch(`${urls[0]}/api-keys`, {
      method: 'POST',
      headers: { cookie, 'x-svc-csrf': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ name, role: 'viewer' }),
    });
    const { key, id } = (await created.json()) as { key: string; id: string };
    return { cookie, id, bearer: { authorization: `Bearer ${key}` } };
  }

  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const s of stores) await s.close();
    await shared?.dispose();
  });

  it('one default tenant and one admin, although both started against an empty schema', async () => {
    const tenants = await shared.store.db.selectFrom('tenants').select('id').execute();
    const users = await shared.store.db.selectFrom('users').select('id').execute();
    expect(tenants).toHaveLength(1);
    expect(users).toHaveLength(1);
  });

  it('login on A, use the session on B; logout on B, refused on A', async () => {
    const login = await fetch(`${urls[0]}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.test', password: 'password123' }),
    });
    expect(login.status).toBe(204);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const me = await fetch(`${urls[1]}/auth/me`, { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { email: string }).email).toBe('root@example.test');
    // Create on A, list on B.
    const key = await fetch(`${urls[0]}/api-keys`, {
      method: 'POST',
      headers: { cookie, 'x-svc-csrf': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'shared', role: 'operator' }),
    });
    expect(key.status).toBe(201);
    const { key: secret, id } = (await key.json()) as { key: string; id: string };
    const listed = (await (await fetch(`${urls[1]}/api-keys`, { headers: { cookie } })).json()) as { api_keys: { id: string }[] };
    expect(listed.api_keys.map((k) => k.id)).toContain(id);
    // The key works on both.
    for (const url of urls) expect((await fetch(`${url}/auth/me`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(200);
    expect((await fetch(`${urls[1]}/auth/logout`, { method: 'POST', headers: { cookie, 'x-svc-csrf': '1' } })).status).toBe(204);
    expect((await fetch(`${urls[0]}/auth/me`, { headers: { cookie } })).status).toBe(401);
  });

  it('an API key revoked on A is refused by B at once, although B remembered it', async () => {
    const { cookie, id, bearer } = await viewerKeyOnA('revoked-on-a');
    for (let i = 0; i < 3; i++) expect((await fetch(`${urls[1]}/auth/me`, { headers: bearer })).status).toBe(200);
    expect((await fetch(`${urls[0]}/api-keys/${id}`, { method: 'DELETE', headers: { cookie, 'x-svc-csrf': '1' } })).status).toBe(204);
    // NOTIFY is delivered at COMMIT; B hears it within milliseconds (far below the 10 s TTL).
    expect(await statusWithin(`${urls[1]}/auth/me`, bearer, 401, 2000)).toBe(401);
    expect((await fetch(`${urls[0]}/auth/me`, { headers: bearer })).status).toBe(401);
  });

  it("while B's listener is down its cache is bypassed, and cleared when the listener is back", async () => {
    const { id, bearer } = await viewerKeyOnA('listener-down');
    expect((await fetch(`${urls[1]}/auth/me`, { headers: bearer })).status).toBe(200);
    // Cut every listener of this schema (both processes'), then revoke by hand: the
    // notification of that revocation reaches nobody.
    const db = shared.store.db;
    const cut = await sql<{
      n: number;
    }>`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = ${`svc-listener:${shared.store.schema}`}`.execute(db);
    expect(cut.rows[0]!.n).toBeGreaterThanOrEqual(2);
    await db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', id).execute();
    // Refused at once (the cache is not trusted while its listener is down) ...
    expect((await fetch(`${urls[1]}/auth/me`, { headers: bearer })).status).toBe(401);
    // ... and still refused after the listener reconnects (it clears on reconnect).
    await new Promise((r) => setTimeout(r, 1500));
    const back = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${`svc-listener:${shared.store.schema}`}`.execute(db);
    expect(back.rows[0]!.n).toBeGreaterThanOrEqual(2);
    expect((await fetch(`${urls[1]}/auth/me`, { headers: bearer })).status).toBe(401);
  });

  it('device counts are consistent whichever process answers', async () => {
    const tenant = await ensureDefaultTenant(stores[0]!.db);
    await stores[0]!.db
      .insertInto('devices')
      .values(Array.from({ length: 30 }, (_, i) => ({ tenant_id: tenant, name: `d-${i}`, status: i % 3 === 0 ? 'online' : 'offline' })))
      .execute();
    const login = await fetch(`${urls[1]}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.test', password: 'password123' }),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect((await fetch(`${urls[1]}/devices/d-3`, { method: 'DELETE', headers: { cookie, 'x-svc-csrf': '1' } })).status).toBe(204);
    const bodies = await Promise.all(
      urls.map(async (u) => (await (await fetch(`${u}/devices?limit=1`, { headers: { cookie } })).json()) as { total: number; counts: unknown }),
    );
    expect(bodies[0]).toEqual(bodies[1]);
    expect(bodies[0]).toMatchObject({ total: 30, counts: { online: 9, offline: 20, decommissioned: 1 } });
  });
});
