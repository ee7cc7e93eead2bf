import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepository } from '../../src/signing-repo/index.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { specKeyId, writeLegacyRepo } from '../helpers/legacy-tuf-repo.js';
import { importPlainKeyFiles } from '../../src/key-custody/import-plain-keys.js';
import { TUF_CLIENTS, type TufClient, type TufClientKind } from '../helpers/tuf-clients.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

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

describe('TUF clients over the REST routes /api/v1/tuf on a real port', () => {
  let t: TestApp;
  let store: TestStore;
  let dir: string;
  let signingRepo: SigningRepository;
  let base: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-tuf-rest-'));
    store = await createTestStore('pglite');
    signingRepo = new SigningRepository({ db: store.store.db, dataDir: dir });
    t = await createTestApp('pglite', { shareWith: store, ctxOverrides: { signingRepo } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.app.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('no port');
    base = `http://127.0.0.1:${addr.port}/api/v1/tuf`;
  });
  afterAll(async () => {
    await t?.dispose();
    await store?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs the pinned tuf-js and the previous major', () => {
    expect(TUF_CLIENTS.map((c) => Number(c.version.split('.')[0]))).toEqual([5, 4]);
  });

  /** A client directory provisioned with root version 1 fetched over REST, with a viewer API key of the tenant. */
  async function provisioned(client: TufClientKind, tenant: string): Promise<{ c: TufClient; metadataDir: string }> {
    const headers = await t.apiKeyHeaders('viewer', tenant);
    const metadataDir = await mkdtemp(join(dir, 'md-'));
    const targetDir = await mkdtemp(join(dir, 'tg-'));
    const root = await fetch(`${base}/${tenant}/metadata/1.root.json`, { headers });
    expect(root.status).toBe(200);
    await writeFile(join(metadataDir, 'root.json'), Buffer.from(await root.arrayBuffer()));
    const paths = { metadataDir, targetDir, metadataBaseUrl: `${base}/${tenant}/metadata`, targetBaseUrl: `${base}/${tenant}/targets` };
    return { c: client.open(paths, headers), metadataDir };
  }

  async function trustedRoot(metadataDir: string): Promise<{ version: number; keyids: string[] }> {
    const root = JSON.parse(await readFile(join(metadataDir, 'root.json'), 'utf8')) as { signed: { version: number; keys: Record<string, unknown> } };
    return { version: root.signed.version, keyids: Object.keys(root.signed.keys).sort() };
  }

  it.each(TUF_CLIENTS.map((c) => [c.name, c]))('%s refreshes and downloads a target of a repository with TUF key ids', async (_name, client) => {
    const tenant = await t.newTenant();
    const bytes = Buffer.from(`payload for ${client.name}\n`);
    await signingRepo.publishTargetStream(tenant, { path: 'artifacts/app/1.0/app.bin' }, Readable.from([bytes]));
    const { c, metadataDir } = await provisioned(client, tenant);
    expect((await c.fetchTarget('artifacts/app/1.0/app.bin'))?.equals(bytes)).toBe(true);
    expect(await c.fetchTarget('artifacts/none')).toBeUndefined();
    const expected = await Promise.all(
      (['root', 'targets', 'snapshot', 'timestamp'] as const).map(async (r) => specKeyId((await signingRepo.keys.load(tenant, r))!.pem)),
    );
    expect(await trustedRoot(metadataDir)).toEqual({ version: 1, keyids: expected.sort() });
  });

  it.each(TUF_CLIENTS.map((c) => [c.name, c]))('%s pinned to a legacy root 1 follows the key id rotation and downloads', async (_name, client) => {
    const tenant = await t.newTenant();
    const bytes = Buffer.from(`legacy payload for ${client.name}\n`);
    const legacy = await writeLegacyRepo(store.store.db, dir, tenant, { targets: [{ path: 'fw.bin', bytes }] });
    // its plain key files are wrapped as a server start does (key-custody/import-plain-keys.ts)
    expect((await importPlainKeyFiles(signingRepo.wrappedKeys, dir)).conflicts).toEqual([]);
    const early = await provisioned(client, tenant);
    expect((await early.c.fetchTarget('fw.bin'))?.equals(bytes)).toBe(true);
    const late = await provisioned(client, tenant);
    expect((await signingRepo.upgradeKeyIds()).rotated).toContainEqual({ tenantId: tenant, rootVersion: 2 });
    const expected = Object.values(legacy.pems).map(specKeyId).sort();
    for (const { c, metadataDir } of [early, late]) {
      expect((await c.fetchTarget('fw.bin'))?.equals(bytes)).toBe(true);
      expect(await trustedRoot(metadataDir)).toEqual({ version: 2, keyids: expected });
    }
  });
});
