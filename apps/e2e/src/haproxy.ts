import { writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { E2eError } from './errors.js';
import { Proc } from './proc.js';
import { waitFor } from './wait.js';

export const HAPROXY = '/usr/sbin/haproxy';

/** One backend server as HAProxy's stats report it. */
export interface BackendStat {
  server: string;
  /** Connections open now. */
  current: number;
  /** Connections since start. */
  total: number;
  /** UP, DOWN, ... */
  status: string;
}

export interface Balancer {
  procs: Proc[];
  /** `127.0.0.1:<port>`: what devices dial. */
  addr: string;
  stats(): Promise<BackendStat[]>;
  stop(): Promise<void>;
}

/** A free loopback port (bound, read, released: good enough for a test on loopback). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Connections one HAProxy process can carry: two descriptors each under this machine's 20000 limit. */
const MAX_CONNECTIONS_PER_PROCESS = 9000;

/**
 * HAProxy in TCP mode in front of several server processes' device ports. TCP, because the
 * device channel is mTLS end to end: the balancer never sees a certificate, each server
 * process authenticates its devices itself. Round robin per connection; a backend is checked
 * every 500 ms, and a connection that cannot reach its backend is retried on another
 * (`option redispatch`), so devices of a killed process reconnect to the others.
 * More than MAX_CONNECTIONS_PER_PROCESS devices need several HAProxy processes: they bind
 * the same port (SO_REUSEPORT, HAProxy's default) and the kernel spreads connections.
 */
export async function startHaproxy(o: { dir: string; backends: string[]; connections?: number; echo?: boolean }): Promise<Balancer> {
  const port = await freePort();
  const count = Math.max(1, Math.ceil((o.connections ?? 1000) / MAX_CONNECTIONS_PER_PROCESS));
  const procs: Proc[] = [];
  const socks: string[] = [];
  for (let i = 0; i < count; i++) {
    const sock = join(o.dir, `haproxy-${i}.sock`);
    const cfg = join(o.dir, `haproxy-${i}.cfg`);
    await writeFile(
      cfg,
      [
        'global',
        `  maxconn ${MAX_CONNECTIONS_PER_PROCESS}`,
        `  stats socket ${sock} mode 600 level admin`,
        'defaults',
        '  mode tcp',
        '  timeout connect 2s',
        '  timeout client 10m',
        '  timeout server 10m',
        '  retries 3',
        '  option redispatch',
        'frontend devices',
        `  bind 127.0.0.1:${port}`,
        '  default_backend servers',
        'backend servers',
        '  balance roundrobin',
        ...o.backends.map((b, j) => `  server s${j} ${b} check inter 500ms fall 1 rise 1`),
        '',
      ].join('\n'),
    );
    // -db: stay in the foreground, logs to stderr
    procs.push(new Proc(`haproxy-${i}`, HAPROXY, ['-db', '-f', cfg], { PATH: process.env.PATH ?? '/usr/bin:/bin' }, { exec: true, echo: o.echo ?? false }));
    socks.push(sock);
  }
  const statsOf = async (sock: string): Promise<BackendStat[]> =>
    (await haproxyStats(sock)).filter((f) => f.backend === 'servers').map(({ backend: _, ...stat }) => stat);
  /** Summed over the HAProxy processes (a backend is UP only when every process sees it up). */
  const stats = async (): Promise<BackendStat[]> => {
    const all = await Promise.all(socks.map(statsOf));
    return all[0]!.map((s, j) => ({
      server: s.server,
      current: all.reduce((n, a) => n + (a[j]?.current ?? 0), 0),
      total: all.reduce((n, a) => n + (a[j]?.total ?? 0), 0),
      status: all.every((a) => a[j]?.status === 'UP') ? 'UP' : (all.find((a) => a[j]?.status !== 'UP')?.[j]?.status ?? 'DOWN'),
    }));
  };
  try {
    await waitFor(
      'HAProxy to answer on its stats sockets',
      async () => {
        const dead = procs.find((p) => !p.running);
        if (dead) throw new E2eError('PROCESS_EXITED', `${dead.name} exited:\n${dead.tail()}`);
        return (await stats()).length === o.backends.length;
      },
      10_000,
      100,
    );
  } catch (e) {
    await Promise.all(procs.map((p) => p.kill()));
    throw e;
  }
  return {
    procs,
    addr: `127.0.0.1:${port}`,
    stats,
    stop: async () => {
      await Promise.all(procs.map((p) => p.stop()));
    },
  };
}

/** Where the balancer listens and the servers it balances (each `host:port`). */
export interface DeploymentBalancing {
  /** HAProxy's admin socket (`show stat`). */
  statsSocket: string;
  /** The device port devices dial: TCP, passed through to a server's device port. */
  devicesBind: string;
  /** The REST API and console operators use: HTTP. */
  apiBind: string;
  /** Each server by name: its device port and its HTTP port. */
  servers: { name: string; device: string; http: string }[];
}

/**
 * The HAProxy configuration of a deployment of several server processes (docs/server.md,
 * "Deployment on several hosts", shows this function's output for its example addresses, and
 * the multi-host test checks that the two agree). The device port is balanced in TCP mode:
 * the channel is mTLS end to end, every server authenticates its devices itself. `leastconn`,
 * because persistent device connections live long; a server is checked every second and a
 * connection that cannot reach its server is tried on another (`option redispatch`). The API
 * is balanced per request in HTTP mode: sessions, API keys and everything a request needs are
 * in PostgreSQL, so any server answers any request.
 */
export function deploymentHaproxyConfig(d: DeploymentBalancing): string {
  return [
    'global',
    '  maxconn 9000',
    `  stats socket ${d.statsSocket} mode 600 level admin`,
    '',
    'defaults',
    '  timeout connect 2s',
    '  timeout client 10m',
    '  timeout server 10m',
    '  retries 3',
    '  option redispatch',
    '',
    'frontend devices',
    '  mode tcp',
    `  bind ${d.devicesBind}`,
    '  default_backend device-channel',
    '',
    'backend device-channel',
    '  mode tcp',
    '  balance leastconn',
    ...d.servers.map((s) => `  server ${s.name} ${s.device} check inter 1s fall 1 rise 1`),
    '',
    'frontend api',
    '  mode http',
    `  bind ${d.apiBind}`,
    '  default_backend api',
    '',
    'backend api',
    '  mode http',
    '  balance roundrobin',
    ...d.servers.map((s) => `  server ${s.name} ${s.http} check inter 1s fall 1 rise 1`),
    '',
  ].join('\n');
}

/** `show stat` of one HAProxy admin socket: the servers of every backend (not the BACKEND rows). */
export async function haproxyStats(sock: string): Promise<(BackendStat & { backend: string })[]> {
  const csv = await new Promise<string>((resolve, reject) => {
    const c = connect(sock);
    let out = '';
    c.on('data', (d) => (out += d.toString('utf8')));
    c.on('end', () => resolve(out));
    c.on('error', reject);
    c.write('show stat\n');
  });
  // # pxname,svname,qcur,qmax,scur,smax,slim,stot,...,status (18th)
  return csv
    .split('\n')
    .filter((l) => !l.startsWith('#') && l.trim() !== '')
    .map((l) => l.split(','))
    .filter((f) => f[1] !== 'BACKEND' && f[1] !== 'FRONTEND')
    .map((f) => ({ backend: f[0]!, server: f[1]!, current: Number(f[4]), total: Number(f[7]), status: f[17] ?? '' }));
}

/**
 * One HAProxy process running `config` (written to `<dir>/haproxy.cfg`), ready once its admin
 * socket answers.
 */
export async function startHaproxyConfig(o: { dir: string; config: string; statsSocket: string; echo?: boolean }): Promise<Proc> {
  const cfg = join(o.dir, 'haproxy.cfg');
  await writeFile(cfg, o.config);
  const proc = new Proc('haproxy', HAPROXY, ['-db', '-f', cfg], { PATH: process.env.PATH ?? '/usr/bin:/bin' }, { exec: true, echo: o.echo ?? false });
  try {
    await waitFor(
      'HAProxy to answer on its stats socket',
      async () => {
        if (!proc.running) throw new E2eError('PROCESS_EXITED', `haproxy exited:\n${proc.tail()}`);
        return (await haproxyStats(o.statsSocket)).length > 0;
      },
      10_000,
      100,
    );
  } catch (e) {
    await proc.kill();
    throw e;
  }
  return proc;
}
