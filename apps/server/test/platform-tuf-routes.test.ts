import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepository } from '../src/signing-repo/index.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { createTestStore, type TestStore } from './helpers/store.js';

describe('operator read access to the tenant TUF repository under /api/v1/tuf', () => {
  let t: TestApp;
  let store: TestStore;
  let dir: string;
  let signingRepo: SigningRepository;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-tuf-routes-'));
    store = await createTestStore('pglite');
    signingRepo = new SigningRepository({ db: store.store.db, dataDir: dir });
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

  // The wildcard parameter `*` is validated by the app's own validator compiler, as in dist/main.js.
  it('serves the own tenant targets through the wildcard route, refusing a bad path value with 400', async () => {
    const bytes = Buffer.from('target bytes\n');
    await signingRepo.publishTargetStream(t.tenantId, { path: 'artifacts/app/1.0/app.bin' }, Readable.from([bytes]));
    const hex = createHash('sha256').update(bytes).digest('hex');
    const viewer = await t.apiKeyHeaders('viewer');
    const url = `/api/v1/tuf/${t.tenantId}/targets/artifacts/app/1.0/${hex}.app.bin`;
    const res = await t.app.inject({ method: 'GET', url, headers: viewer });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
    const missing = await t.app.inject({ method: 'GET', url: `/api/v1/tuf/${t.tenantId}/targets/artifacts/none`, headers: viewer });
    expect(missing.statusCode).toBe(404);
    const nul = await t.app.inject({ method: 'GET', url: `/api/v1/tuf/${t.tenantId}/targets/a%00b`, headers: viewer });
    expect(nul.statusCode).toBe(400);
    expect(nul.json()).toEqual({ error: 'params.*: must not contain control characters (U+0000 at index 1)' });
    const long = await t.app.inject({ method: 'GET', url: `/api/v1/tuf/${t.tenantId}/targets/${'a'.repeat(701)}`, headers: viewer });
    expect(long.statusCode).toBe(400);
    expect(long.json().error).toMatch(/^params\.\*: /);
  });
});
