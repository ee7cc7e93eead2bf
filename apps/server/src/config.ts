import { resolve } from 'node:path';

/**
 * Server settings, exactly contracts §6. A bad setting fails at start with ONE clear line
 * naming the variable (ConfigError), never a stack trace.
 */
export interface Address {
  host: string;
  port: number;
}

export interface ServerConfig {
  /** Embedded database, signing repository, CA material. */
  dataDir: string;
  /** `postgres://...` or undefined for the embedded database. */
  databaseUrl: string | undefined;
  /** Schema to keep all tables in (`SVC_DATABASE_SCHEMA`, default `public`). */
  databaseSchema: string;
  httpAddr: Address;
  deviceAddr: Address;
  /** `SVC_DEVICE_BUNDLE_ADDR`: the bundle port (HTTPS, device mTLS) RAUC streams os-bundles from; off when unset. */
  deviceBundleAddr?: Address;
  admin: { email: string; password: string } | undefined;
  /** `SVC_DEVICE_CHECKIN_INTERVAL_S`: heartbeat period asked of devices (default: the channel's 60 s). */
  checkInIntervalS?: number;
  /** `SVC_DATABASE_POOL_SIZE`: PostgreSQL connections per process (default: store/open.ts defaultPoolSize). */
  databasePoolSize?: number;
  /**
   * `SVC_BLOB_STORE`: `fs` (`<dataDir>/blobs`) or `postgres` (the database's blob tables);
   * unset = `postgres` with SVC_DATABASE_URL, `fs` with the embedded database (blobs/selection.ts).
   */
  blobStore?: 'fs' | 'postgres';
  /** `SVC_RECEIPT_VERIFY_THREADS`: receipt verification threads, 0 = on the event loop (default: one per core but one, at most 4). */
  receiptVerifyThreads?: number;
  /** `SVC_DEVICE_MAX_CONNECTIONS`: device connections this process holds at once (default: device-channel/context.ts CHANNEL_DEFAULTS). */
  deviceMaxConnections?: number;
  /** `SVC_DEVICE_RETRY_AFTER_S`: the wait told to a device refused at that cap (default: CHANNEL_DEFAULTS). */
  deviceRetryAfterS?: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function parseConfig(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): ServerConfig {
  const databaseUrl = nonEmpty(env.SVC_DATABASE_URL);
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('SVC_DATABASE_URL: must start with postgres:// or postgresql://');
  }
  const schema = nonEmpty(env.SVC_DATABASE_SCHEMA) ?? 'public';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new ConfigError('SVC_DATABASE_SCHEMA: must match ^[a-z_][a-z0-9_]{0,62}$');
  const email = nonEmpty(env.SVC_ADMIN_EMAIL);
  const password = nonEmpty(env.SVC_ADMIN_PASSWORD);
  if ((email === undefined) !== (password === undefined)) {
    throw new ConfigError('SVC_ADMIN_EMAIL and SVC_ADMIN_PASSWORD: set both or neither');
  }
  if (email !== undefined && !EMAIL.test(email)) throw new ConfigError('SVC_ADMIN_EMAIL: not an email address');
  if (password !== undefined && password.length < 8) throw new ConfigError('SVC_ADMIN_PASSWORD: must be at least 8 characters');
  const interval = nonEmpty(env.SVC_DEVICE_CHECKIN_INTERVAL_S);
  if (interval !== undefined && !(/^\d{1,5}$/.test(interval) && Number(interval) >= 1 && Number(interval) <= 86400)) {
    throw new ConfigError('SVC_DEVICE_CHECKIN_INTERVAL_S: must be an integer number of seconds 1..86400');
  }
  const poolSize = nonEmpty(env.SVC_DATABASE_POOL_SIZE);
  if (poolSize !== undefined && !(/^\d{1,3}$/.test(poolSize) && Number(poolSize) >= 2 && Number(poolSize) <= 500)) {
    throw new ConfigError('SVC_DATABASE_POOL_SIZE: must be an integer 2..500');
  }
  const verifyThreads = nonEmpty(env.SVC_RECEIPT_VERIFY_THREADS);
  if (verifyThreads !== undefined && !(/^\d{1,2}$/.test(verifyThreads) && Number(verifyThreads) <= 64)) {
    throw new ConfigError('SVC_RECEIPT_VERIFY_THREADS: must be an integer 0..64');
  }
  const maxConnections = nonEmpty(env.SVC_DEVICE_MAX_CONNECTIONS);
  if (maxConnections !== undefined && !(/^\d{1,7}$/.test(maxConnections) && Number(maxConnections) >= 1 && Number(maxConnections) <= 1_000_000)) {
    throw new ConfigError('SVC_DEVICE_MAX_CONNECTIONS: must be an integer 1..1000000');
  }
  const retryAfter = nonEmpty(env.SVC_DEVICE_RETRY_AFTER_S);
  if (retryAfter !== undefined && !(/^\d{1,4}$/.test(retryAfter) && Number(retryAfter) >= 1 && Number(retryAfter) <= 3600)) {
    throw new ConfigError('SVC_DEVICE_RETRY_AFTER_S: must be an integer number of seconds 1..3600');
  }
  const blobStore = nonEmpty(env.SVC_BLOB_STORE);
  if (blobStore !== undefined && blobStore !== 'fs' && blobStore !== 'postgres') {
    throw new ConfigError(`SVC_BLOB_STORE: must be fs or postgres, got ${JSON.stringify(blobStore)}`);
  }
  return {
    dataDir: resolve(cwd, nonEmpty(env.SVC_DATA_DIR) ?? './.svc-data'),
    databaseUrl,
    databaseSchema: schema,
    httpAddr: parseAddress('SVC_HTTP_ADDR', env.SVC_HTTP_ADDR ?? '127.0.0.1:8080'),
    deviceAddr: parseAddress('SVC_DEVICE_ADDR', env.SVC_DEVICE_ADDR ?? '127.0.0.1:8443'),
    ...(nonEmpty(env.SVC_DEVICE_BUNDLE_ADDR) !== undefined
      ? { deviceBundleAddr: parseAddress('SVC_DEVICE_BUNDLE_ADDR', env.SVC_DEVICE_BUNDLE_ADDR!.trim()) }
      : {}),
    admin: email !== undefined && password !== undefined ? { email, password } : undefined,
    ...(interval !== undefined ? { checkInIntervalS: Number(interval) } : {}),
    ...(poolSize !== undefined ? { databasePoolSize: Number(poolSize) } : {}),
    ...(verifyThreads !== undefined ? { receiptVerifyThreads: Number(verifyThreads) } : {}),
    ...(maxConnections !== undefined ? { deviceMaxConnections: Number(maxConnections) } : {}),
    ...(retryAfter !== undefined ? { deviceRetryAfterS: Number(retryAfter) } : {}),
    ...(blobStore !== undefined ? { blobStore } : {}),
  };
}

export const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** `host:port` or `[v6]:port`; port 0 = any free port (tests). */
export function parseAddress(name: string, value: string): Address {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new ConfigError(`${name}: expected host:port (e.g. 127.0.0.1:8080), got ${JSON.stringify(value)}`);
  return { host: m[1] ?? m[2]!, port };
}
