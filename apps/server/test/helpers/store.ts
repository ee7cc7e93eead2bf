/**
 * Test stores for every suite of apps/server (shared by all engineers).
 *
 *   describe.each(availableDrivers())('... on %s', (driver) => {
 *     let t: TestStore;
 *     beforeAll(async () => { t = await createTestStore(driver); });   // migrated, fresh schema
 *     afterAll(async () => { await t.dispose(); });                    // drops the schema
 *   });
 *
 * - `availableDrivers()` is always `['pglite']`, plus `'postgres'` when SVC_TEST_DATABASE_URL is set.
 * - PGlite takes ~5 s to start, so ONE instance is shared per test file (per worker process),
 *   started from the cluster image the global setup made (helpers/global-setup.ts: no initdb);
 *   every `createTestStore` call gets its own randomly named schema on it, so tests isolate
 *   by schema (or by tenant inside one store).
 * - A data directory a test hands to another process (`node dist/main.js`, a crash child) starts
 *   with `seedPgliteCluster(dataDir)`: a copy of the same cluster instead of an initdb of its
 *   own (about 12 s of CPU). Only a test of the first start itself (platform-main,
 *   store-embedded-init) leaves the directory empty.
 * - On PostgreSQL each call creates its own schema in the SVC_TEST_DATABASE_URL database and
 *   drops it (CASCADE) on dispose.
 */
import { randomBytes } from 'node:crypto';
import { cpSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { inject } from 'vitest';
import { migrateToLatest, SCHEMA_LOCK_KEY } from '../../src/store/migrate.js';
import { openStore, startPglite, type Driver, type Store } from '../../src/store/open.js';

export interface TestStore {
  store: Store;
  driver: Driver;
  /** Options that open a second store on the SAME database and schema (a second "process"). */
  openOptions: { databaseUrl?: string; pglite?: PGlite; schema: string };
  dispose(): Promise<void>;
}

export function availableDrivers(): Driver[] {
  return process.env.SVC_TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

let sharedPglite: Promise<PGlite> | undefined;

/** The one PGlite instance of this test file (started on first use). */
export function filePglite(): Promise<PGlite> {
  sharedPglite ??= readFile(inject('pgliteImage')).then((image) => startPglite(undefined, new Blob([image])));
  return sharedPglite;
}

/**
 * Makes `<dataDir>/db` a copy of the cluster the global setup initialised, as a server's first
 * start would have left it after initdb: the process a test starts on `dataDir` resumes it
 * (store/open.ts `startPglite`) instead of running initdb.
 */
export function seedPgliteCluster(dataDir: string): Promise<void> {
  // the synchronous copy: about a third of the CPU of fs.promises.cp on its ~1000 small files
  cpSync(inject('pgliteCluster'), join(dataDir, 'db'), { recursive: true, errorOnExist: true, force: false });
  return Promise.resolve();
}

export function randomSchemaName(): string {
  return `t_${randomBytes(8).toString('hex')}`;
}

export async function createTestStore(driver: Driver, options: { migrate?: boolean; schema?: string; shareWith?: TestStore } = {}): Promise<TestStore> {
  const schema = options.schema ?? randomSchemaName();
  const openOptions = driver === 'postgres' ? { databaseUrl: requirePgUrl(), schema } : { pglite: await filePglite(), schema };
  const store = await openStore(openOptions);
  if (options.migrate !== false) await migrateToLatest(store);
  return {
    store,
    driver,
    openOptions,
    dispose: async () => {
      await dropSchema(store, schema);
      await store.close();
    },
  };
}

/** Drops a test schema; on PostgreSQL under the lock migrations hold (see SCHEMA_LOCK_KEY). */
export async function dropSchema(store: Store, schema: string): Promise<void> {
  if (store.driver !== 'postgres') {
    await sql.raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).execute(store.db);
    return;
  }
  await store.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${SCHEMA_LOCK_KEY})`.execute(trx);
    await sql.raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).execute(trx);
  });
}

/** Drops a schema a separate process (dist/main.js with SVC_DATABASE_SCHEMA) made on PostgreSQL. */
export async function dropSchemaAt(databaseUrl: string, schema: string): Promise<void> {
  const store = await openStore({ databaseUrl });
  try {
    await dropSchema(store, schema);
  } finally {
    await store.close();
  }
}

function requirePgUrl(): string {
  const url = process.env.SVC_TEST_DATABASE_URL;
  if (!url) throw new Error('SVC_TEST_DATABASE_URL is not set');
  return url;
}
