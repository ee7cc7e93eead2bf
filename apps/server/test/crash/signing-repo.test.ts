/**
 * Fault injection in the publish flow: the blob is stored first, the metadata is
 * committed after it in one transaction. An abort at either step (a throwing hook, or a real
 * process killed with SIGKILL) leaves no partial metadata, and a retry succeeds.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SigningRepository } from '../../src/signing-repo/index.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { openStore, type OpenStoreOptions, type Store } from '../../src/store/open.js';
import { availableDrivers, createTestStore, seedPgliteCluster } from '../helpers/store.js';
import { createRepoFixture, type RepoFixture } from '../fixtures/signing-repo.js';
import { runChildUntilKilled, STORE_FILES, transpileForChild as transpile } from '../helpers/kill-child.js';

async function counts(db: Kysely<any>, tenantId: string): Promise<{ metadata: Record<string, number>; targetFiles: number }> {
  const rows = await db
    .selectFrom('tuf_metadata')
    .select(['role', (eb: any) => eb.fn.max('version').as('v')])
    .where('tenant_id', '=', tenantId)
    .groupBy('role')
    .execute();
  const files = await db
    .selectFrom('tuf_target_files')
    .select((eb: any) => eb.fn.countAll().as('n'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  return { metadata: Object.fromEntries(rows.map((r: any) => [r.role, Number(r.v)])), targetFiles: Number((files as any).n) };
}

const UNCHANGED = { metadata: { root: 1, targets: 1, snapshot: 1, timestamp: 1 }, targetFiles: 0 };
const PUBLISHED = { metadata: { root: 1, targets: 2, snapshot: 2, timestamp: 2 }, targetFiles: 1 };

describe.each(availableDrivers())('publish faults injected in-process on %s', (driver) => {
  let f: RepoFixture;
  beforeAll(async () => {
    f = await createRepoFixture(driver);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it.each(['afterBlobStored', 'beforeCommit'] as const)('a failure at %s leaves no metadata, and a retry succeeds', async (stage) => {
    const tenant = await f.newTenant();
    const faulty = await f.second({ hooks: { [stage]: () => Promise.reject(new Error(`injected at ${stage}`)) } });
    const payload = randomBytes(10_000);
    await expect(faulty.publishTargetStream(tenant, { path: 'artifacts/x/1/x.bin' }, Readable.from([payload]))).rejects.toThrow(`injected at ${stage}`);
    expect(await counts(f.db, tenant)).toEqual(UNCHANGED);
    expect(await f.repo.getTargetInfo(tenant, 'artifacts/x/1/x.bin')).toBeUndefined();

    const ok = await f.repo.publishTargetStream(tenant, { path: 'artifacts/x/1/x.bin' }, Readable.from([payload]));
    expect(ok.changed).toBe(true);
    expect(await counts(f.db, tenant)).toEqual(PUBLISHED);
  });
});

/**
 * The child process runs the real repository code. Node 20 cannot run TypeScript, so the
 * modules it needs are transpiled (no type check: tsc -b does that) into a directory under
 * apps/server/node_modules/.cache, where package resolution works as for src/.
 */
function transpileForChild(): Promise<string> {
  return transpile('svc-crash-child', {
    files: [...STORE_FILES, 'src/config.ts', 'src/limits.ts'],
    // the repository opens its keys through key custody (wrapped keys, the default KEK file)
    dirs: ['src/signing-repo', 'src/blobs', 'src/key-custody'],
    childSource: `import { Readable } from 'node:stream';
import { openStore } from './src/store/open.js';
import { SigningRepository } from './src/signing-repo/repository.js';
import { readFile } from 'node:fs/promises';
const cfg = JSON.parse(await readFile(process.argv[2], 'utf8'));
const store = await openStore(cfg.open);
// Park forever at the chosen step and tell the parent, which then SIGKILLs us.
const park = (stage) => async () => {
  if (stage !== cfg.killAt) return;
  process.stdout.write('AT ' + stage + '\\n');
  await new Promise(() => setInterval(() => {}, 1000));
};
const repo = new SigningRepository({ db: store.db, dataDir: cfg.dataDir, hooks: { afterBlobStored: park('afterBlobStored'), beforeCommit: park('beforeCommit') } });
await repo.publishTargetStream(cfg.tenantId, { path: cfg.path }, Readable.from([await readFile(cfg.payloadFile)]));
process.stdout.write('DONE\\n');
await store.close();
`,
  });
}

describe.each(availableDrivers())('publish interrupted by SIGKILL in a child process on %s', (driver) => {
  let childDir: string;
  let dataDir: string;
  let store: Store;
  let open: OpenStoreOptions;
  let disposeStore: () => Promise<void>;

  beforeAll(async () => {
    childDir = await transpileForChild();
    dataDir = await mkdtemp(join(tmpdir(), 'svc-crash-'));
    if (driver === 'postgres') {
      const t = await createTestStore('postgres');
      store = t.store;
      open = t.openOptions;
      disposeStore = t.dispose;
    } else {
      // PGlite is single-process: the parent closes it before the child opens the same directory.
      await seedPgliteCluster(dataDir);
      open = { pgliteDir: join(dataDir, 'db') };
      store = await openStore(open);
      await migrateToLatest(store);
      await store.close();
      disposeStore = async () => undefined; // each test closes what it opens
    }
  });
  afterAll(async () => {
    await disposeStore?.();
    await rm(childDir, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each(['afterBlobStored', 'beforeCommit'] as const)(
    'killed at %s: no partial metadata, blob kept, retry succeeds',
    async (killAt) => {
      if (driver === 'pglite') store = await openStore(open);
      const tenantId = randomUUID();
      await store.db.insertInto('tenants').values({ id: tenantId, name: 'crash', is_default: false }).execute();
      await new SigningRepository({ db: store.db, dataDir }).ensureTenantRepo(tenantId);
      const payload = randomBytes(64 * 1024);
      const path = `artifacts/crash/${killAt}/payload.bin`;
      const payloadFile = join(dataDir, `payload-${killAt}`);
      await writeFile(payloadFile, payload);
      if (driver === 'pglite') await store.close();

      const run = await runChildUntilKilled(childDir, { open, dataDir, tenantId, killAt, path, payloadFile });
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe(`AT ${killAt}\n`);
      expect(run.signal).toBe('SIGKILL');

      if (driver === 'pglite') store = await openStore(open); // crash recovery of the embedded database
      const repo = new SigningRepository({ db: store.db, dataDir });
      expect(await counts(store.db as Kysely<any>, tenantId)).toEqual(UNCHANGED);
      // The blob was durably stored before the kill: harmless (content-addressed), reused by the retry.
      const blobDir = join(dataDir, 'blobs', 'sha256');
      expect((await readdir(blobDir)).length).toBeGreaterThan(0);

      const retry = await repo.publishTargetStream(tenantId, { path }, Readable.from([payload]));
      expect(retry.changed).toBe(true);
      expect(await counts(store.db as Kysely<any>, tenantId)).toEqual(PUBLISHED);
      expect(await readdir(blobDir)).toContain(retry.digest.slice(7));
      if (driver === 'pglite') await store.close();
    },
    120_000,
  ); // three PGlite opens of one data dir (child included): slow on 2 busy cores
});
