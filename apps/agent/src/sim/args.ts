import { parseArgs } from 'node:util';

export interface SimArgs {
  server: string;
  token: string;
  devices: number;
  intervalS: number;
  serverCa: string;
  prefix: string;
  /** Enroll calls in flight at once, over `enrollLanes` connections: the server group-commits them. */
  concurrency: number;
  /** Calls in flight across the whole fleet; a device whose turn finds the window full skips it. */
  maxInFlight: number;
  /** Stop after this many seconds and print a summary (0 = run until SIGINT). */
  durationS: number;
  statsEveryS: number;
  /** Seconds of authenticated empty calls (Ping) before check-ins start: the benchmark baseline. */
  pingFirstS: number;
  /** Failed calls (enrollments, pings, check-ins, receipts) tolerated before the exit status is 1. */
  maxErrors: number;
  /** `persistent`: every device keeps its connection; `per-check-in`: connects per turn, closes after `idleCloseS`. */
  connection: 'persistent' | 'per-check-in';
  idleCloseS: number;
  /** Connections the enrollments share (`concurrency` Enroll calls in flight over them). */
  enrollLanes: number;
  /** Identity cache: devices enrolled by an earlier run against the same server are reused (identity-cache.ts). */
  identities: string | undefined;
  /** Each turn comes `intervalS` +- this percentage (uniformly) after the last. */
  jitterPct: number;
  /** Worker threads of this one process the devices' turns run on (per-check-in only; main.ts `runThreads`). */
  threads: number;
}

export class UsageError extends Error {}

/** Printed with every usage error (exit status 2). */
export const SIM_USAGE = `usage: pnpm sim --devices N --token T [--server host:port] [--server-ca PATH] [--interval S]
  [--duration S] [--concurrency C] [--max-in-flight C] [--prefix P] [--ping-first S] [--stats-every S] [--max-errors N]
  [--connection persistent|per-check-in] [--idle-close S] [--jitter PCT]
  [--enroll-lanes L] [--identities FILE] [--threads T]
Exit status: 0 when every device enrolled and at most --max-errors (default 0) calls failed;
1 otherwise, with the reason on stderr (the summary line is still printed); 2 for a usage error.`;

/** `pnpm sim --devices N [--server host:port] [--token T] [--interval S] ...` (SIM_USAGE) */
export function parseSimArgs(argv: string[], env: Record<string, string | undefined> = process.env): SimArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      server: { type: 'string', default: env.SVC_AGENT_SERVER ?? '127.0.0.1:8443' },
      token: { type: 'string', default: env.SVC_AGENT_ENROLL_TOKEN ?? '' },
      devices: { type: 'string', default: '10' },
      interval: { type: 'string', default: '60' },
      'server-ca': { type: 'string', default: env.SVC_AGENT_SERVER_CA ?? './.svc-data/ca/server/ca.pem' },
      prefix: { type: 'string', default: 'sim' },
      concurrency: { type: 'string', default: '256' },
      'max-in-flight': { type: 'string', default: '64' },
      duration: { type: 'string', default: '0' },
      'stats-every': { type: 'string', default: '10' },
      'ping-first': { type: 'string', default: '0' },
      'max-errors': { type: 'string', default: '0' },
      connection: { type: 'string', default: 'persistent' },
      'idle-close': { type: 'string', default: '30' },
      'enroll-lanes': { type: 'string', default: '4' },
      identities: { type: 'string' },
      jitter: { type: 'string', default: '0' },
      threads: { type: 'string', default: '1' },
    },
    strict: true,
  });
  const int = (name: string, v: string | undefined, min: number, max: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`--${name}: must be an integer ${min}..${max}`);
    return n;
  };
  const token = values.token ?? '';
  if (token === '') throw new UsageError('--token: required (an enrollment token with at least --devices uses)');
  if (!/^[^\s:]+:\d{1,5}$/.test(values.server ?? '')) throw new UsageError('--server: must be host:port');
  const prefix = values.prefix ?? 'sim';
  if (!/^[a-z0-9][a-z0-9._-]{0,40}$/.test(prefix)) throw new UsageError('--prefix: must match ^[a-z0-9][a-z0-9._-]{0,40}$');
  const connection = values.connection;
  if (connection !== 'persistent' && connection !== 'per-check-in') throw new UsageError('--connection: must be persistent or per-check-in');
  const threads = int('threads', values.threads, 1, 64);
  if (threads > 1 && connection !== 'per-check-in') throw new UsageError('--threads: more than 1 needs --connection per-check-in');
  return {
    server: values.server,
    token,
    devices: int('devices', values.devices, 1, 100_000),
    intervalS: int('interval', values.interval, 1, 86_400),
    serverCa: values['server-ca'],
    prefix,
    concurrency: int('concurrency', values.concurrency, 1, 4096),
    maxInFlight: int('max-in-flight', values['max-in-flight'], 1, 100_000),
    durationS: int('duration', values.duration, 0, 86_400),
    statsEveryS: int('stats-every', values['stats-every'], 1, 3600),
    pingFirstS: int('ping-first', values['ping-first'], 0, 3600),
    maxErrors: int('max-errors', values['max-errors'], 0, Number.MAX_SAFE_INTEGER),
    connection,
    idleCloseS: int('idle-close', values['idle-close'], 1, 3600),
    enrollLanes: int('enroll-lanes', values['enroll-lanes'], 1, 64),
    identities: values.identities === '' ? undefined : values.identities,
    jitterPct: int('jitter', values.jitter, 0, 50),
    threads,
  };
}
