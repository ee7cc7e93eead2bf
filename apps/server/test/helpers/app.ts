/**
 * A built app on a fresh test store, with ready-made credentials (shared by all engineers).
 *
 *   describe.each(availableDrivers())('devices on %s', (driver) => {
 *     let t: TestApp;
 *     beforeAll(async () => { t = await createTestApp(driver); });
 *     afterAll(async () => { await t.dispose(); });
 *     it('lists', async () => {
 *       const admin = await t.loginAs('admin');              // { cookie: 'svc_session=...', 'x-svc-csrf': '1' } via POST /auth/login
 *       const res = await t.app.inject({ method: 'GET', url: '/api/v1/devices', headers: admin });
 *       const key = await t.apiKeyHeaders('viewer');         // { authorization: 'Bearer ...' }
 *     });
 *   });
 *
 * - `t.tenantId` is the default tenant; `t.newTenant()` makes another (cross-tenant 404 tests).
 * - `t.clock` is the injected clock: `t.clock.set(new Date(...))` moves "now" for expiry tests.
 * - `ctxOverrides` lets a test set other AppContext fields (e.g. a small bodyLimit).
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { hashPassword } from '../../src/auth/password.js';
import type { Role } from '../../src/auth/permissions.js';
import { newSecret } from '../../src/auth/secrets.js';
import type { ServerConfig } from '../../src/config.js';
import type { AppContext } from '../../src/http/context.js';
import { insertApiKey } from '../../src/resources/api-keys/queries.js';
import type { Driver } from '../../src/store/open.js';
import { createTenant, ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { insertUser } from '../../src/resources/users/queries.js';
import { createTestStore, type TestStore } from './store.js';

export const TEST_PASSWORD = 'correct horse battery staple';

/** A logged-in session's request headers (a plain header record, spreadable into any request). */
export type SessionHeaders = Record<string, string> & {
  cookie: string;
  'x-svc-csrf': '1';
};

export interface TestClock {
  now(): Date;
  set(d: Date): void;
  advance(ms: number): void;
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  testStore: TestStore;
  tenantId: string;
  clock: TestClock;
  /**
   * Creates (once per role and tenant) a user and logs in; returns the headers a browser
   * session sends: the cookie and the CSRF header cookie-authenticated writes need.
   */
  loginAs(role: Role, tenantId?: string): Promise<SessionHeaders>;
  /** Creates a user directly in the store; returns its id and email. */
  createUser(role: Role, tenantId?: string, email?: string): Promise<{ id: string; email: string }>;
  /** Creates an API key directly in the store; returns `{ authorization }` headers. */
  apiKeyHeaders(role: Role, tenantId?: string): Promise<{ authorization: string }>;
  newTenant(name?: string): Promise<string>;
  dispose(): Promise<void>;
}

export function testConfig(overrides: Partial<ServerConfig> = {}): ServerConfig {
  return {
    dataDir: '/nonexistent-test-data-dir',
    databaseUrl: undefined,
    databaseSchema: 'public',
    httpAddr: { host: '127.0.0.1', port: 0 },
    deviceAddr: { host: '127.0.0.1', port: 0 },
    admin: undefined,
    ...overrides,
  };
}

export function testClock(start = new Date()): TestClock {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    set: (d) => {
      current = d.getTime();
    },
    advance: (ms) => {
      current += ms;
    },
  };
}

let counter = 0;

export async function createTestApp(driver: Driver, options: { shareWith?: TestStore; ctxOverrides?: Partial<AppContext> } = {}): Promise<TestApp> {
  const testStore = options.shareWith ?? (await createTestStore(driver));
  const clock = testClock();
  const ctx: AppContext = { store: testStore.store, config: testConfig(), now: clock.now, logger: false, ...options.ctxOverrides };
  const app = await buildApp(ctx);
  await app.ready();
  const tenantId = await ensureDefaultTenant(testStore.store.db);
  const users = new Map<string, string>();

  const createUser = async (role: Role, tenant = tenantId, email = `${role}-${++counter}-${tenant.slice(0, 8)}@example.test`) => {
    const user = await insertUser(testStore.store.db, { tenantId: tenant, email, displayName: role, role, passwordHash: await hashPassword(TEST_PASSWORD) });
    return { id: user.id, email };
  };

  return {
    app,
    ctx,
    testStore,
    tenantId,
    clock,
    createUser,
    loginAs: async (role, tenant = tenantId) => {
      const key = `${tenant}/${role}`;
      let email = users.get(key);
      if (email === undefined) {
        email = (await createUser(role, tenant)).email;
        users.set(key, email);
      }
      const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } });
      if (res.statusCode !== 204) throw new Error(`login as ${role} failed: ${res.statusCode} ${res.body}`);
      const cookie = res.cookies.find((c) => c.name === 'svc_session');
      if (!cookie) throw new Error('login set no svc_session cookie');
      return { cookie: `svc_session=${cookie.value}`, 'x-svc-csrf': '1' };
    },
    apiKeyHeaders: async (role, tenant = tenantId) => {
      const secret = newSecret('svck');
      await insertApiKey(testStore.store.db, {
        tenantId: tenant,
        name: `test-${role}-${++counter}`,
        role,
        prefix: secret.prefix,
        keyHash: secret.hash,
        createdBy: null,
      });
      return { authorization: `Bearer ${secret.plaintext}` };
    },
    newTenant: (name = `tenant-${++counter}`) => createTenant(testStore.store.db, name),
    dispose: async () => {
      await app.close();
      if (options.shareWith === undefined) await testStore.dispose();
    },
  };
}

/** One answer of `jsonApi`: the status, the body parsed as JSON (else its text), the raw bytes and the headers. */
export interface ApiAnswer {
  status: number;
  body: any;
  raw: Buffer;
  headers: Record<string, unknown>;
}

export type ApiCall = (method: string, url: string, payload?: unknown, headers?: Record<string, string>) => Promise<ApiAnswer>;

/** Requests to the test app's REST API, sent with `defaults` unless other headers are given. */
export function jsonApi(t: TestApp, defaults: Record<string, string>): ApiCall {
  return async (method, url, payload, headers = defaults) => {
    const res = await t.app.inject({ method: method as never, url, headers, ...(payload === undefined ? {} : { payload: payload as never }) });
    let body: any;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = res.body;
    }
    return { status: res.statusCode, body, raw: res.rawPayload, headers: res.headers };
  };
}
