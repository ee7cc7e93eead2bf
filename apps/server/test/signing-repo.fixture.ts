/**
 * Shared set-up of the signing-repository suites: a migrated test store (fresh schema),
 * a temp SVC_DATA_DIR, tenants, a SigningRepository with a settable clock, and the
 * read-only HTTP routes on a real port 0.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { newFastify } from '../src/http/fastify.js';
import type { Kysely } from 'kysely';
import { SigningRepository, signingRepoRoutes, type PublishHooks } from '../src/signing-repo/index.js';
import { createTestStore, type TestStore } from './helpers/store.js';
import { openStore, type Driver, type Store } from '../src/store/open.js';

export interface RepoFixture {
  t: TestStore;
  db: Kysely<any>;
  dataDir: string;
  repo: SigningRepository;
  tenantId: string;
  /** The repository's clock; tests move it. */
  clock: { now: Date };
  newTenant(): Promise<string>;
  /** Another SigningRepository on its own store handle to the same database and schema (a second server process). */
  second(opts?: { dataDir?: string; hooks?: PublishHooks }): Promise<SigningRepository>;
  dispose(): Promise<void>;
}

export async function createRepoFixture(driver: Driver, opts: { hooks?: PublishHooks } = {}): Promise<RepoFixture> {
  const t = await createTestStore(driver);
  const db = t.store.db as Kysely<any>;
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-signing-repo-'));
  const clock = { now: new Date() };
  const newTenant = async () => {
    const id = randomUUID();
    await db
      .insertInto('tenants')
      .values({ id, name: `tenant ${id.slice(0, 8)}`, is_default: false })
      .execute();
    return id;
  };
  const make = (handle: Kysely<any>, o: { dataDir?: string; hooks?: PublishHooks } = {}) =>
    new SigningRepository({ db: handle, dataDir: o.dataDir ?? dataDir, clock: () => clock.now, ...(o.hooks ? { hooks: o.hooks } : {}) });
  const repo = make(db, opts);
  const extraStores: Store[] = [];
  const tenantId = await newTenant();
  return {
    t,
    db,
    dataDir,
    repo,
    tenantId,
    clock,
    newTenant,
    second: async (o) => {
      const store = await openStore(t.openOptions);
      extraStores.push(store);
      return make(store.db as Kysely<any>, o);
    },
    dispose: async () => {
      for (const s of extraStores) await s.close();
      await t.dispose();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The repository routes on 127.0.0.1:0; `base` is `http://127.0.0.1:<port>`. */
export async function serveRepo(repo: SigningRepository): Promise<{ app: FastifyInstance; base: string }> {
  const app = newFastify();
  await app.register(signingRepoRoutes, { repo, permission: 'public' });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return { app, base: `http://127.0.0.1:${addr.port}` };
}

/** Collects a readable into one Buffer. */
export async function readAll(stream: AsyncIterable<Uint8Array | string>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : Buffer.from(c));
  return Buffer.concat(chunks);
}
