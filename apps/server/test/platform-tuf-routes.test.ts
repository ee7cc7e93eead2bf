import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepository } from '../src/signing-repo/index.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { createTestStore, type TestStore } from './helpers/store.js';

describe('operator read access to the tenant TUF repository under /api/v1/tuf', () => {
  let t: TestApp;
  let store: TestStore;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-tuf-routes-'));
    store = await createTestStore('pglite');
    const signingRepo = new SigningRepository({ db: store.store.db, dataDir: dir });
    t = await createTestApp('pglite', { shareWith: store, ctxOverrides: { signingRepo } });
    await signingRepo.ensureTenantRepo(t.tenantId);
  });
  afterAll(async () => {
    await t?.dispose();
    await store?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the own tenant root with a permission, 404 for another tenant, 401 without credential', async () => {
    const viewer = await t.apiKeyHeaders('viewer');
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/tuf/${t.tenantId}/metadata/1.root.json`, headers: viewer });
    expect(res.statusCode).toBe(200);
    expect(res.json().signed._type).toBe('root');
    const other = await t.apiKeyHeaders('viewer', await t.newTenant());
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/tuf/${t.tenantId}/metadata/1.root.json`, headers: other })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/tuf/${t.tenantId}/metadata/1.root.json` })).statusCode).toBe(401);
    const route = t.app.collectedRoutes.find((r) => r.url.startsWith('/api/v1/tuf/'));
    expect(route?.permission).toBe('artifacts.read');
  });
});
