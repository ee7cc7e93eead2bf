import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashedTargetPath } from '@svc/release-core';
import { buildApp } from '../../src/app.js';
import { blobStoreKind, openBlobStore } from '../../src/blobs/index.js';
import { bootstrapAdmin } from '../../src/resources/tenants/bootstrap.js';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { SigningRepository } from '../../src/signing-repo/index.js';
import { openStore, type Store } from '../../src/store/open.js';
import { testConfig } from '../helpers/app.js';
import { createTestStore, type TestStore } from '../helpers/store.js';
import { artifactMultipart } from '../fixtures/release-flow.js';

/**
 * Two server apps on one PostgreSQL schema, each with its own store (own pool) and its own
 * data directory, on real loopback ports: blobs go to the database by default there, so an
 * artifact published through one downloads byte for byte through the other, ranges included.
 */
const pgUrl = process.env.SVC_TEST_DATABASE_URL;
if (!pgUrl && process.env.CI === 'true') throw new Error('blobs-pg-two-apps: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('blobs-pg-two-apps: SVC_TEST_DATABASE_URL not set; the test needs PostgreSQL and is skipped');

describe.skipIf(!pgUrl)('an artifact uploaded through one server app downloads through another (blobs in PostgreSQL)', () => {
  let shared: TestStore;
  const stores: Store[] = [];
  const apps: FastifyInstance[] = [];
  const dirs: string[] = [];
  const urls: string[] = [];
  let tenant: string;
  let cookie: string;

  beforeAll(async () => {
    shared = await createTestStore('postgres');
    for (let i = 0; i < 2; i++) {
      const store = await openStore(shared.openOptions);
      const dataDir = await mkdtemp(join(tmpdir(), `svc-blobs-app${i}-`));
      tenant = await ensureDefaultTenant(store.db);
      await bootstrapAdmin(store.db, tenant, { email: 'root@example.test', password: 'password123' });
      // what main.ts does: SVC_DATABASE_URL set, SVC_BLOB_STORE unset
      const kind = blobStoreKind(undefined, pgUrl);
      const signingRepo = new SigningRepository({ db: store.db, dataDir, blobs: openBlobStore(kind, { db: store.db, dataDir }) });
      await signingRepo.ensureTenantRepo(tenant);
      const app = await buildApp({ store, config: testConfig({ dataDir, databaseUrl: pgUrl }), now: () => new Date(), logger: false, signingRepo });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const addr = app.server.address();
      if (addr === null || typeof addr === 'string') throw new Error('no port');
      stores.push(store);
      apps.push(app);
      dirs.push(dataDir);
      urls.push(`http://127.0.0.1:${addr.port}/api/v1`);
    }
    const login = await fetch(`${urls[0]}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.test', password: 'password123' }),
    });
    cookie = login.headers.get('set-cookie')!.split(';')[0]!;
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    for (const s of stores) await s.close();
    await shared?.dispose();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('publishes on A; B serves the same bytes, whole and by range, from its empty data directory', async () => {
    const MIB = 1024 * 1024;
    const bytes = randomBytes(3 * MIB + 4321);
    const { payload, contentType } = artifactMultipart({ name: 'model-a', version: '1.0.0', kind: 'model', bytes });
    const created = await fetch(`${urls[0]}/artifacts`, { method: 'POST', headers: { cookie, 'x-svc-csrf': '1', 'content-type': contentType }, body: payload });
    expect(created.status).toBe(201);
    const artifact = (await created.json()) as { digest: string; length: number; target: string };
    const hex = createHash('sha256').update(bytes).digest('hex');
    expect(artifact).toMatchObject({ digest: `sha256:${hex}`, length: bytes.length });

    const url = `${urls[1]}/tuf/${tenant}/targets/${hashedTargetPath(artifact.target, hex)}`;
    const whole = await fetch(url, { headers: { cookie } });
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);

    // a resumed download across the first chunk boundary, and the tail
    const part = await fetch(url, { headers: { cookie, range: `bytes=${MIB - 100}-${2 * MIB + 99}` } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes ${MIB - 100}-${2 * MIB + 99}/${bytes.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(MIB - 100, 2 * MIB + 100))).toBe(true);
    const tail = await fetch(url, { headers: { cookie, range: 'bytes=-5000' } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(bytes.length - 5000))).toBe(true);

    // neither data directory holds a blob
    for (const d of dirs) expect((await readdir(d)).includes('blobs')).toBe(false);
  });
});
