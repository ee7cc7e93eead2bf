import { setTimeout as sleep } from 'node:timers/promises';
import { E2eError } from './errors.js';
import { SIM_MAIN } from './paths.js';
import { Proc } from './proc.js';

export interface SimOptions {
  /** --server: the server's device channel `host:port`. */
  deviceAddr: string;
  /** --server-ca: the server CA PEM file. */
  serverCaFile: string;
  /** --token: an enrollment token with at least `devices` uses. */
  token: string;
  /** --devices */
  devices: number;
  /** --prefix; the devices are named `<prefix>-000000`, `<prefix>-000001`, ... */
  prefix?: string;
  /** --interval (seconds between a device's check-ins); default 1. */
  intervalS?: number;
  /** --concurrency (Enroll calls in flight at once); default 4. */
  concurrency?: number;
  /** --enroll-lanes (connections the enrollments share); the simulator's default when absent. */
  enrollLanes?: number;
  /** --identities: the identity cache file (reused when it matches, written after enrolling). */
  identities?: string;
  /** --connection; the simulator's default (persistent) when absent. */
  connection?: 'persistent' | 'per-check-in';
  /** --idle-close (seconds a per-check-in connection stays open without a call); the simulator's default when absent. */
  idleCloseS?: number;
  /** A network namespace (`ip netns`) to run in. */
  netns?: string;
  /** --stats-every (seconds between `stats` lines); default 1. */
  statsEveryS?: number;
  /**
   * --max-errors: failed device calls the run tolerates; default 0, so `stop()` fails on any
   * error. A scenario that makes calls fail on purpose (a server killed mid-run) raises it.
   */
  maxErrors?: number;
  echo?: boolean;
}

/** One JSON line of the simulator's stdout: `enrolled`, `stats` or `summary`. */
export interface SimEvent {
  event: string;
  [k: string]: unknown;
}

/** The simulator's `summary` line, printed when it stops. */
export interface SimSummary {
  enrolled: number;
  pings: number;
  checkIns: number;
  receipts: number;
  duplicates: number;
  errors: number;
  skipped: number;
  lastError?: string;
}

export interface SimProcess {
  proc: Proc;
  /** The simulated devices' names, in enrollment order. */
  names: string[];
  /** Every JSON line printed so far (other lines are skipped). */
  events(): SimEvent[];
  /**
   * The first event (already printed or future) `match` accepts; fails on exit, or after
   * `idleMs` in which the simulator's counters (enrolled or connected devices, receipts, errors
   * of its latest line) did not change: bound by the fleet's progress, not by wall time.
   */
  waitForEvent(what: string, match: (e: SimEvent) => boolean, idleMs?: number): Promise<SimEvent>;
  /**
   * SIGTERM; the `summary` line of a clean exit (status 0: every device enrolled, at most
   * `maxErrors` failed calls). Fails with the simulator's stderr reason otherwise.
   */
  stop(): Promise<SimSummary>;
}

/**
 * How far the simulated fleet has come: the counters of its latest line. Check-ins, rates and
 * RSS are left out: devices check in while nothing else moves, which is no progress.
 */
function progressOf(events: SimEvent[]): string {
  const e = events.at(-1);
  if (e === undefined) return '';
  return JSON.stringify([e.event, e.devices, e.receipts, e.errors]);
}

function parseEvents(lines: string[]): SimEvent[] {
  const out: SimEvent[] = [];
  for (const l of lines) {
    if (!l.startsWith('{')) continue;
    try {
      const v = JSON.parse(l) as unknown;
      if (typeof v === 'object' && v !== null && typeof (v as SimEvent).event === 'string') out.push(v as SimEvent);
    } catch {
      // a line cut by the bounded log; the next stats line carries the same counters
    }
  }
  return out;
}

/**
 * `node apps/agent/dist/sim/main.js`: `devices` simulated devices in one process, each with
 * its own key, certificate and mTLS connection, checking in every `intervalS` seconds and
 * uploading a signed receipt for every signed assignment. Ready once it printed its
 * `enrolled` line (every enrollment attempted).
 */
export async function startSim(o: SimOptions): Promise<SimProcess> {
  const prefix = o.prefix ?? 'sim';
  const args = [
    '--server',
    o.deviceAddr,
    '--server-ca',
    o.serverCaFile,
    '--token',
    o.token,
    '--devices',
    String(o.devices),
    '--prefix',
    prefix,
    '--interval',
    String(o.intervalS ?? 1),
    '--concurrency',
    String(o.concurrency ?? 4),
    '--stats-every',
    String(o.statsEveryS ?? 1),
    '--max-errors',
    String(o.maxErrors ?? 0),
    ...(o.enrollLanes === undefined ? [] : ['--enroll-lanes', String(o.enrollLanes)]),
    ...(o.identities === undefined ? [] : ['--identities', o.identities]),
    ...(o.connection === undefined ? [] : ['--connection', o.connection]),
    ...(o.idleCloseS === undefined ? [] : ['--idle-close', String(o.idleCloseS)]),
  ];
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
  const proc = new Proc('sim', SIM_MAIN, args, env, { echo: o.echo ?? false, ...(o.netns === undefined ? {} : { netns: o.netns }) });
  const events = () => parseEvents(proc.lines);
  const sim: SimProcess = {
    proc,
    names: Array.from({ length: o.devices }, (_, i) => `${prefix}-${String(i).padStart(6, '0')}`),
    events,
    waitForEvent: async (what, match, idleMs = 60_000) => {
      let last = '';
      let lastChange = Date.now();
      for (;;) {
        const all = events();
        const hit = all.find(match);
        if (hit !== undefined) return hit;
        if (!proc.running) throw new E2eError('PROCESS_EXITED', `sim exited before ${what}:\n${proc.tail()}`);
        const now = progressOf(all);
        if (now !== last) {
          last = now;
          lastChange = Date.now();
        }
        if (Date.now() - lastChange > idleMs) throw new E2eError('TIMEOUT', `sim: no ${what} and no progress for ${idleMs} ms:\n${proc.tail()}`);
        await sleep(100);
      }
    },
    stop: async () => {
      const exit = await proc.stop();
      const summary = events().find((e) => e.event === 'summary');
      if (summary === undefined) throw new E2eError('PROCESS_EXITED', `sim exited (${exit.code ?? exit.signal}) without a summary:\n${proc.tail()}`);
      if (exit.code !== 0) {
        const reason = proc.lines.filter((l) => l.startsWith('svc-sim: ')).join('; ');
        throw new E2eError('PROCESS_EXITED', `sim exited (${exit.code ?? exit.signal}): ${reason}\n${proc.tail()}`);
      }
      const { event: _event, ...counts } = summary;
      return counts as unknown as SimSummary;
    },
  };
  try {
    await sim.waitForEvent('the enrolled line', (e) => e.event === 'enrolled', 90_000);
  } catch (e) {
    await proc.kill();
    throw e;
  }
  return sim;
}
