import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, rmdir } from 'node:fs/promises';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';
import { builtFile } from '../built-file.js';
import { bindSearchPath } from './pglite-schema.js';
import { listenPglite, listenPostgres, type ChangeListener, type OnChange } from './notify.js';
import { preparePooledStatements } from './prepared.js';

export type Driver = 'pglite' | 'postgres';

/** An open database: the typed query builder plus what is needed to close it. */
export interface Store {
  readonly db: Kysely<Database>;
  readonly driver: Driver;
  /** The PostgreSQL schema every table lives in (`search_path` is pinned to it). */
  readonly schema: string;
  /** Calls `onChange` on every NOTIFY `channel` about this schema (store/notify.ts). */
  listen(channel: string, onChange: OnChange): Promise<ChangeListener>;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** `postgres://...`: use PostgreSQL; otherwise the embedded PGlite database. */
  databaseUrl?: string;
  /** Embedded database directory (`<SVC_DATA_DIR>/db`); omitted = in memory. */
  pgliteDir?: string;
  /** An already started PGlite instance to share (tests: one per file). Not closed by `close()`. */
  pglite?: PGlite;
  /** Schema to use; created when missing. Default `public`. */
  schema?: string;
  /** PostgreSQL pool size (default `defaultPoolSize()`). */
  poolSize?: number;
}

/**
 * Default PostgreSQL connections per server process: twice this host's CPUs, at least 4
 * and at most 16. More connections than the database can run at once only add context
 * switches and queueing inside PostgreSQL: on the 2-core bench machine, 16 connections gave
 * the device list a p99 of 55-77 ms and 4 connections 22-28 ms at higher throughput (docs/
 * server.md). Set `SVC_DATABASE_POOL_SIZE` to about twice the database server's cores
 * divided by the number of server processes when the database runs elsewhere.
 */
export function defaultPoolSize(): number {
  return Math.min(16, Math.max(4, 2 * availableParallelism()));
}

const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

const pools = new WeakMap<object, pg.Pool>();

/**
 * The node-postgres pool under a store's query builder on PostgreSQL (undefined on PGlite), for
 * what Kysely cannot express: the blob store reads chunks with COPY's binary format.
 */
export function postgresPoolOf(db: object): pg.Pool | undefined {
  return pools.get(db);
}

/**
 * PostgreSQL settings of the embedded database, sized for a gateway-class server (1 GiB of
 * memory). PGlite starts with PostgreSQL's defaults, made for a database host: 128 MB of
 * `shared_buffers` alone is a quarter of such a box, and PGlite's WebAssembly memory never
 * shrinks once grown. The embedded database serves one process and its files stay in the
 * operating system's page cache, so a small buffer pool costs little (docs/server.md, "Memory
 * of the embedded server"; `pnpm bench` prints the RSS).
 */
export const EMBEDDED_PG_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  temp_buffers: '4MB',
  wal_buffers: '1MB',
  maintenance_work_mem: '16MB',
};

const embeddedStartParams = (): string[] => [...PGlite.defaultStartParams, ...Object.entries(EMBEDDED_PG_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`])];

/**
 * Starts PGlite with the extensions the migrations need (pg_trgm for device search). With
 * `image` (a `dumpDataDir()` tarball) an in-memory instance starts from that cluster instead
 * of running initdb: about a second instead of three or four. A directory that holds no
 * cluster yet is initialised by a short-lived child process (`pglite-init.ts`): PGlite's
 * initdb runs three WebAssembly instances at once (about 450 MB) whose memory this process
 * would otherwise keep, since WebAssembly memory is only returned when collected.
 */
export async function startPglite(dir?: string, image?: Blob): Promise<PGlite> {
  if (dir !== undefined && image === undefined) await initPgliteDir(dir);
  else if (dir !== undefined) await mkdir(dir, { recursive: true });
  const instance = new PGlite({
    ...(dir === undefined ? {} : { dataDir: dir }),
    ...(image === undefined ? {} : { loadDataDir: image }),
    extensions: { pg_trgm },
    startParams: embeddedStartParams(),
  });
  await instance.waitReady;
  return instance;
}

/**
 * Makes `dir` a PGlite cluster when it is not one yet: initdb runs in a child process into a
 * sibling directory that is renamed into place once complete, so a start interrupted during
 * initdb leaves no half-made cluster behind.
 */
async function initPgliteDir(dir: string): Promise<void> {
  if (existsSync(join(dir, 'PG_VERSION'))) return;
  await mkdir(dirname(dir), { recursive: true });
  const pending = `${dir}.initdb`;
  await rm(pending, { recursive: true, force: true });
  const child = spawn(process.execPath, [fileURLToPath(builtFile('./pglite-init.js', import.meta.url, 'embedded database initdb')), pending], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2000)));
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  if (code !== 0) throw new Error(`embedded database: initdb of ${dir} failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`);
  // an empty directory made by an earlier version or by hand is replaced; one with files is not
  await rmdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw new Error(`embedded database: ${dir} exists, is not empty and holds no cluster (no PG_VERSION)`);
  });
  await rename(pending, dir);
}

/**
 * Opens the store on PostgreSQL or PGlite with `search_path` pinned to `schema` (then
 * `public`, where pg_trgm lives). Same schema, migrations and queries on both drivers.
 */
export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  const schema = options.schema ?? 'public';
  if (!SCHEMA_PATTERN.test(schema)) throw new Error(`schema: must match ${SCHEMA_PATTERN.source}, got ${JSON.stringify(schema)}`);
  // The pattern keeps the name free of quotes and spaces, so it is safe unquoted here.
  const searchPath = schema === 'public' ? 'public' : `${schema},public`;

  if (options.databaseUrl !== undefined) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? defaultPoolSize(),
      options: `-c search_path=${searchPath}`,
    });
    preparePooledStatements(pool);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    pools.set(db, pool);
    await sql.raw(`CREATE SCHEMA IF NOT EXISTS "${schema}"`).execute(db).catch(ignoreDuplicate);
    const url = options.databaseUrl;
    return { db, driver: 'postgres', schema, listen: (channel, onChange) => listenPostgres(url, channel, schema, onChange), close: () => db.destroy() };
  }

  const owned = options.pglite === undefined;
  const instance = options.pglite ?? (await startPglite(options.pgliteDir));
  await instance.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  // One PGlite session may serve several schemas (tests): bind this store's search_path.
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite: bindSearchPath(instance, searchPath) }) });
  return {
    db,
    driver: 'pglite',
    schema,
    listen: (channel, onChange) => listenPglite(instance, channel, schema, onChange),
    // Kysely's PGlite driver closes the instance on destroy; a shared one must survive.
    close: async () => {
      if (owned) await db.destroy();
    },
  };
}

/** Two processes creating the same schema or extension at once: the loser's error is harmless. */
export function ignoreDuplicate(error: unknown): void {
  const code = (error as { code?: string }).code;
  if (code === '23505' || code === '42P06' || code === '42710') return;
  throw error;
}

export function pgliteDataDir(dataDir: string): string {
  return join(dataDir, 'db');
}
