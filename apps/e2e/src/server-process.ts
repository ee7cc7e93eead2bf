import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seedPgliteCluster } from './pglite-cluster.js';
import { Proc } from './proc.js';
import { SERVER_MAIN } from './paths.js';

export interface ServerOptions {
  /** SVC_DATA_DIR: embedded database (unless databaseUrl), signing repository, CA material. */
  dataDir: string;
  admin: { email: string; password: string };
  /** SVC_DATABASE_URL: PostgreSQL instead of the embedded database. */
  databaseUrl?: string;
  /** SVC_DATABASE_SCHEMA (PostgreSQL tests isolate by schema). */
  schema?: string;
  /** SVC_DEVICE_CHECKIN_INTERVAL_S; default 1 so agents pick up work at once. */
  checkInIntervalS?: number;
  /** SVC_KEK_FILE; with PostgreSQL the default is one key file per schema, shared by the processes on this machine. */
  kekFile?: string;
  /** A network namespace (`ip netns`) to run in, as a host of its own. */
  netns?: string;
  /** The address both ports bind (default 127.0.0.1). */
  host?: string;
  /** SVC_HTTP_ADDR's port (default 0: any). */
  httpPort?: number;
  /** SVC_DEVICE_ADDR's port (default 0: any). */
  devicePort?: number;
  /** Anything else in the server's environment (e.g. a preloaded clock for renewal tests). */
  env?: NodeJS.ProcessEnv;
  echo?: boolean;
}

export interface ServerProcess {
  proc: Proc;
  /** `http://<host>:<port>` */
  url: string;
  /** `host:port` of the device gRPC channel (what agents get as SVC_AGENT_SERVER). */
  deviceAddr: string;
  /** The server CA PEM file agents pin for enrollment (SVC_AGENT_SERVER_CA). */
  serverCaFile: string;
  stop(): Promise<number | null>;
}

/**
 * `node apps/server/dist/main.js`, by default on loopback ports chosen by the kernel (port 0). Ready when
 * it printed its plain `svc-server: http listening on URL` line and logged the device port.
 */
export async function startServer(o: ServerOptions): Promise<ServerProcess> {
  const host = o.host ?? '127.0.0.1';
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    SVC_DATA_DIR: o.dataDir,
    SVC_HTTP_ADDR: `${host}:${o.httpPort ?? 0}`,
    SVC_DEVICE_ADDR: `${host}:${o.devicePort ?? 0}`,
    SVC_ADMIN_EMAIL: o.admin.email,
    SVC_ADMIN_PASSWORD: o.admin.password,
    SVC_LOG_LEVEL: 'info',
    SVC_DEVICE_CHECKIN_INTERVAL_S: String(o.checkInIntervalS ?? 1),
    ...(o.databaseUrl ? { SVC_DATABASE_URL: o.databaseUrl, SVC_KEK_FILE: o.kekFile ?? (await sharedKekFile(o.schema ?? 'public')) } : {}),
    ...(o.schema ? { SVC_DATABASE_SCHEMA: o.schema } : {}),
    ...o.env,
  };
  if (env.SVC_DATABASE_URL === undefined) await seedPgliteCluster(o.dataDir);
  const proc = new Proc(o.netns === undefined ? 'server' : `server@${o.netns}`, SERVER_MAIN, [], env, {
    echo: o.echo ?? false,
    ...(o.netns === undefined ? {} : { netns: o.netns }),
  });
  try {
    // the device channel starts before the plain line is printed
    // bound by progress: the server logs each step of its start (store ready, vacuum, device channel)
    const device = await proc.waitForLine(/"port":(\d+).*"msg":"device channel listening"|"msg":"device channel listening".*"port":(\d+)/, 90_000, 0, {
      idle: true,
    });
    const http = await proc.waitForLine(/^svc-server: http listening on (http:\/\/\S+)$/, 90_000, 0, { idle: true });
    return {
      proc,
      url: http[1]!,
      deviceAddr: `${host}:${device[1] ?? device[2]}`,
      serverCaFile: join(o.dataDir, 'ca', 'server', 'ca.pem'),
      stop: async () => (await proc.stop()).code,
    };
  } catch (e) {
    await proc.kill();
    throw e;
  }
}

/**
 * With PostgreSQL every server process must open the same key-encryption key (docs/server.md
 * "Key encryption"): one 32-byte key file per schema, outside every data directory.
 */
async function sharedKekFile(schema: string): Promise<string> {
  const path = join(tmpdir(), `svc-e2e-kek-${schema}`);
  await writeFile(path, randomBytes(32), { mode: 0o600, flag: 'wx' }).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EEXIST') throw e;
  });
  return path;
}
