// What every server bench shares about its exit status: a target "NOT MET" is a measurement
// (exit 0); a bench that could not measure (failed calls, a phase without a single sample, a
// server that did not start) names the reason on stderr and exits 1.
import { readFile } from 'node:fs/promises';
import pg from 'pg';

/** A figure the bench could not measure; the message says which and why. */
export class NotMeasured extends Error {
  name = 'NotMeasured';
}

/** Throws NotMeasured(`why`) unless `ok`. */
export function measured(ok, why) {
  if (!ok) throw new NotMeasured(why);
}

/** The mean of `samples`; NotMeasured naming `what` when there is none or one is not a finite number. */
export function meanOf(samples, what) {
  if (samples.length === 0) throw new NotMeasured(`${what}: no sample`);
  if (!samples.every(Number.isFinite)) throw new NotMeasured(`${what}: a sample is not a number (${samples.join(', ')})`);
  return samples.reduce((a, b) => a + b, 0) / samples.length;
}

/**
 * Runs `body`; when it throws, `<name> bench: could not measure: <reason>` on stderr and exit
 * status 1 (the stack too, unless the reason is a NotMeasured).
 */
export async function benchMain(name, body) {
  try {
    await body();
  } catch (e) {
    process.stderr.write(`${name} bench: could not measure: ${e instanceof Error ? e.message : String(e)}\n`);
    if (!(e instanceof NotMeasured) && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    process.exitCode = 1;
  }
}

/** The node flags each host of a deployment on PostgreSQL adds (docs/server.md, "Deployment on several hosts"). */
export const POSTGRES_NODE_FLAGS = ['--max-semi-space-size=64'];

/**
 * How the server is launched as deployed: the environment and node flags of `pnpm start`
 * (apps/server/package.json, `[NAME=value ...] node [--flag ...] dist/main.js`), plus, on
 * PostgreSQL, the flags a deployment's hosts add. Throws when the start script has another form.
 */
export function serverLaunch(packageJson, driver) {
  const start = JSON.parse(packageJson).scripts.start;
  const m = /^((?:[A-Z_]+=\S+ )*)node((?: --\S+)*) dist\/main\.js$/.exec(start);
  if (m === null) throw new Error(`bench: cannot read the launch from the start script ${JSON.stringify(start)}`);
  const env = Object.fromEntries(
    m[1]
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const flags = m[2].trim().split(/\s+/).filter(Boolean);
  return { env, flags: driver === 'postgres' ? [...flags, ...POSTGRES_NODE_FLAGS] : flags };
}

/**
 * CPU a process has used so far, from /proc/<pid>/stat: user and system (kernel) seconds, and
 * its start time (clock ticks since boot: a reused pid is another process). Throws when the
 * process is gone.
 */
export async function cpuTimes(pid) {
  // after "pid (comm) ": state (0), ppid (1), ..., utime (11), stime (12), ..., starttime (19)
  const f = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ');
  return { user: Number(f[11]) / 100, system: Number(f[12]) / 100, start: f[19] };
}

/** CPU seconds (user + system) a process has used so far. */
export async function cpuSeconds(pid) {
  const t = await cpuTimes(pid);
  return t.user + t.system;
}

/**
 * PostgreSQL CPU spent for this run's server only: its own backends, found by the
 * application_name the bench puts in the server's database URL, each read from
 * /proc/<pid>/stat (PostgreSQL runs on this machine). Other work on the same cluster (other
 * test runs, the bench's own queries) is not counted. Each backend (pid and start time, so a
 * reused pid is another backend) counts its last reading minus its first, a backend first seen
 * during the phase from zero: every term is a difference of one process's monotonic counter,
 * so the sum cannot go negative. Polled every 200 ms during the phase so a backend that ends
 * meanwhile loses at most its last 200 ms. (Summing every postgres process of the machine
 * before and after went negative when backends ended during the phase and mixed in everyone
 * else's queries.)
 */
export class BackendCpu {
  constructor(url, applicationName) {
    this.client = new pg.Client({ connectionString: url, application_name: 'svc-bench-sampler' });
    this.applicationName = applicationName;
    this.first = new Map();
    this.last = new Map();
    this.pids = new Set();
  }

  async sample(initial) {
    const { rows } = await this.client.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [this.applicationName]);
    for (const { pid } of rows) this.pids.add(pid);
    for (const pid of this.pids) {
      const t = await cpuTimes(pid).catch(() => undefined);
      if (t === undefined) {
        this.pids.delete(pid);
        continue;
      }
      const key = `${pid}@${t.start}`;
      const seconds = t.user + t.system;
      if (!this.first.has(key)) this.first.set(key, initial ? seconds : 0);
      this.last.set(key, seconds);
    }
  }

  async start() {
    await this.client.connect();
    await this.sample(true);
    this.timer = setInterval(() => void this.sample(false).catch(() => {}), 200);
  }

  /** CPU seconds of the server's backends since start(), and how many backends served it. */
  async stop() {
    clearInterval(this.timer);
    await this.sample(false);
    await this.client.end();
    let seconds = 0;
    let backends = 0;
    for (const [key, last] of this.last) {
      const d = last - this.first.get(key);
      seconds += d;
      if (d > 0) backends += 1;
    }
    return { seconds, backends };
  }
}

/** The database URL with an application_name that marks the server's connections. */
export function withApplicationName(url, name) {
  const u = new URL(url);
  u.searchParams.set('application_name', name);
  return u.toString();
}

/**
 * What autovacuum would do for one schema, where the bench's PostgreSQL has it off (a CI
 * database may): every minute, VACUUM (ANALYZE) the schema's tables past autovacuum's default
 * thresholds, through the server's own embedded vacuum job's pass (`vacuumDueTables`) on a store
 * of that schema. A deployment runs with autovacuum on (docs/server.md); without it no table the
 * bench fills has statistics and the server would be measured on plans no deployment gets. Does
 * nothing where autovacuum is on.
 */
export class AutovacuumStandIn {
  constructor(url, schema) {
    this.url = url;
    this.schema = schema;
  }

  /** Starts it when autovacuum is off, with one pass now; whether it runs. */
  async start() {
    const [{ openStore }, { autovacuumOff, vacuumDueTables }] = await Promise.all([import('../dist/store/open.js'), import('../dist/jobs/embedded-vacuum.js')]);
    this.store = await openStore({ databaseUrl: this.url, schema: this.schema, poolSize: 1 });
    if (!(await autovacuumOff(this.store.db))) {
      await this.store.close();
      this.store = undefined;
      return false;
    }
    const pass = () => vacuumDueTables(this.store.db);
    await pass();
    this.timer = setInterval(() => void pass().catch(() => {}), 60_000);
    return true;
  }

  async stop() {
    clearInterval(this.timer);
    await this.store?.close();
  }
}
