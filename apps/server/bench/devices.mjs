#!/usr/bin/env node
/**
 * Scale benchmark of GET /api/v1/devices. Imports the BUILT server (dist/).
 *
 *   pnpm --filter @svc/server bench            # embedded 100k, then PostgreSQL 100k and 1M when
 *                                              # SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL is set
 *   node bench/devices.mjs --quick             # without the 1M run
 *   node bench/devices.mjs --full              # only PostgreSQL with 1M devices
 *   node bench/devices.mjs --quick --devices 20000 --driver postgres   # smaller, one driver
 *
 * Options: `--devices N` seeds N devices instead of 100k (the targets are stated for 100k, so
 * another size prints its figures without a verdict), `--driver embedded|postgres` runs one
 * driver. BENCH_SERVER_FLAGS are extra node flags for the server (e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/devices-prof`); with --cpu-prof each scenario's window is printed in the
 * profile's clock, for bench/cpuprofile.mjs.
 *
 * The targets (per driver at 100k devices), each printed with met / NOT MET, and again all
 * together at the end of the run:
 * - PostgreSQL first page (total + counts): >= 0.2x the baseline, p99 < 20 ms;
 * - embedded first page: >= 1,000 req/s, p99 < 100 ms;
 * - PostgreSQL `q=` substring search: >= 0.1x the baseline;
 * - offset 50k: p99 < 100 ms (PostgreSQL), < 200 ms (embedded).
 * A scenario that could not be measured (wrk timeouts, non-2xx answers) is printed as such,
 * counts as not met, and the run goes on.
 *
 * Per driver: seed N devices with one server-side INSERT ... SELECT generate_series (the
 * statement-level counts trigger runs once), start the real server as `pnpm start` runs it
 * (`node <flags> dist/main.js`, flags read from package.json) on loopback, then drive it
 * from a separate process (wrk, else autocannon) with 50 connections for 5 s per scenario.
 * A bare fastify route answering the same first-page bytes, in its own process, is measured
 * in the same run as the baseline; ratios are against it.
 *
 * Pinning (the load generator pinned apart from the server): with taskset and at
 * least 2 CPUs, the server process (and the baseline) run on CPU 0 and the load generator
 * on CPU 1; PostgreSQL's backends are left to the scheduler. Without pinning, wrk's two
 * threads, the server and PostgreSQL preempt each other on 2 cores and the p99 mostly
 * measures that.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { seedDevices } from './seed-devices.mjs';
import { benchKekEnv } from './kek.mjs';
import { serverLaunch } from './measure.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '../dist');
const { openStore, migrateToLatest, ensureDefaultTenant, newSecret, insertApiKey } = await import(join(dist, 'index.js'));

const full = process.argv.includes('--full');
const quick = process.argv.includes('--quick');
const option = (name) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const DEVICES = Number(option('--devices') ?? 100_000);
if (!Number.isInteger(DEVICES) || DEVICES < 100) throw new Error(`--devices: an integer >= 100, got ${option('--devices')}`);
const DRIVER = option('--driver');
if (DRIVER !== undefined && DRIVER !== 'embedded' && DRIVER !== 'postgres') throw new Error(`--driver: embedded or postgres, got ${DRIVER}`);
const SERVER_FLAGS = (process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean);
/** Now in the clock of a server's .cpuprofile (CLOCK_MONOTONIC, microseconds). */
const monoUs = () => process.hrtime.bigint() / 1000n;
/** Every target of the run with its verdict, printed together at the end. */
const verdicts = [];
const DURATION_S = Number(process.env.SVC_BENCH_SECONDS ?? 5);
const WARMUP_S = 2;
const CONNECTIONS = 50;
const pgUrl = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const useWrk = existsSync('/usr/bin/wrk') || spawnSync('wrk', ['--version']).status !== null;
const pin = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
/** `cmd args` on one CPU (when pinning), else as is. */
const pinned = (cpu, cmd, args) => (pin ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]);
const SERVER_CPU = 0;
const LOAD_CPU = 1;
/** The server's environment and node flags as deployed (`pnpm start`, plus the PostgreSQL hosts' flags). */
const launchOf = (driver) => serverLaunch(readFileSync(resolve(here, '../package.json'), 'utf8'), driver);

async function seed(storeOptions, n) {
  const store = await openStore(storeOptions);
  await migrateToLatest(store);
  const tenant = await ensureDefaultTenant(store.db);
  const seedMs = await seedDevices(store.db, tenant, n);
  const secret = newSecret('svck');
  await insertApiKey(store.db, { tenantId: tenant, name: 'bench', role: 'viewer', prefix: secret.prefix, keyHash: secret.hash, createdBy: null });
  const plan = await sql`EXPLAIN SELECT name FROM devices WHERE tenant_id = ${tenant} AND name ILIKE '%0042%' ORDER BY name LIMIT 50`.execute(store.db);
  await store.close();
  return { seedMs, key: secret.plaintext, plan: plan.rows.map((r) => r['QUERY PLAN']).join('\n') };
}

/** CPU time (user + system) in ms of `pids` so far, from /proc (clock ticks of 10 ms). */
function cpuMsOf(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      // the fields after the command name, which is in parentheses and may hold spaces
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile: its time is lost, the figure reads low
    }
  }
  return ticks * 10;
}

/** The PostgreSQL backends serving the bench server's pool (its PGAPPNAME). */
async function backendPids(db, appName) {
  const { rows } = await sql`SELECT pid FROM pg_stat_activity WHERE application_name = ${appName}`.execute(db);
  return rows.map((r) => r.pid);
}

/**
 * `drive()` with the CPU time the server process (and on PostgreSQL its backends) spent per
 * request: a figure the machine's other load changes far less than the rate or the latency.
 */
async function driveWithCpu(url, headers, serverPid, backends) {
  const s0 = cpuMsOf([serverPid]);
  const d0 = cpuMsOf(backends);
  const r = await drive(url, headers);
  const requests = r.rps * DURATION_S;
  return {
    ...r,
    serverUs: ((cpuMsOf([serverPid]) - s0) * 1000) / requests,
    dbUs: backends.length > 0 ? ((cpuMsOf(backends) - d0) * 1000) / requests : undefined,
  };
}

function startServer(env) {
  return new Promise((resolvePort, reject) => {
    const launch = launchOf(env.SVC_DATABASE_URL ? 'postgres' : 'embedded');
    const [cmd, args] = pinned(SERVER_CPU, process.execPath, [...launch.flags, ...SERVER_FLAGS, join(dist, 'main.js')]);
    const child = spawn(cmd, args, {
      env: { ...process.env, ...launch.env, SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onData = (d) => {
      out += d;
      const m = /svc-server: http listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolvePort({ child, port: Number(m[1]) });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${out.slice(-2000)}`)));
  });
}

function stop(child) {
  return new Promise((r) => {
    child.removeAllListeners('exit');
    child.on('exit', r);
    child.kill('SIGTERM');
  });
}

/** Runs a command without blocking this process's event loop (the baseline server lives here). */
function run(command, commandArgs) {
  return new Promise((res, rej) => {
    const [cmd, args] = pinned(LOAD_CPU, command, commandArgs);
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('exit', (code) => (code === 0 ? res(stdout) : rej(new Error(`${cmd} exited ${code}: ${stderr}`))));
  });
}

/** Load from a separate process; returns { rps, p99Ms }. */
async function drive(url, headers = {}, seconds = DURATION_S) {
  if (useWrk) {
    // One wrk thread per CPU it may use: two threads time-sliced on one pinned CPU add their
    // own scheduling delay to every latency (bare fastify: p99 60-80 ms with -t2, 3 ms with -t1).
    const args = [
      `-t${pin ? 1 : 2}`,
      `-c${CONNECTIONS}`,
      `-d${seconds}s`,
      // a busy machine can hold a request past wrk's default 2 s: measure it rather than drop it
      '--timeout',
      '10s',
      '--latency',
      ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]),
      url,
    ];
    const stdout = await run('wrk', args);
    const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
    const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(stdout);
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
    const scale = { us: 0.001, ms: 1, s: 1000 };
    if (non2xx > 0) throw new Error(`${url}: ${non2xx} non-2xx responses`);
    // wrk counts a refused, reset or timed-out connection apart from the requests: any is a failed run
    const sockets = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
    if (sockets && sockets.slice(1).some((n) => Number(n) > 0)) throw new Error(`${url}: wrk socket errors (${sockets[0]})`);
    if (!(rps > 0) || !p99) throw new Error(`${url}: wrk measured no requests:\n${stdout}`);
    return { rps, p99Ms: Number(p99[1]) * scale[p99[2]] };
  }
  const bin = resolve(here, '../node_modules/.bin/autocannon');
  const stdout = await run(bin, [
    '-c',
    String(CONNECTIONS),
    '-d',
    String(seconds),
    '-j',
    ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]),
    url,
  ]);
  const j = JSON.parse(stdout);
  if (j.non2xx > 0) throw new Error(`${url}: ${j.non2xx} non-2xx responses`);
  if (j.errors > 0 || j.timeouts > 0) throw new Error(`${url}: ${j.errors} connection errors, ${j.timeouts} timeouts`);
  if (!(j.requests.average > 0)) throw new Error(`${url}: autocannon measured no requests`);
  return { rps: j.requests.average, p99Ms: j.latency.p99 };
}

async function baseline(bytes, dir) {
  const file = join(dir, 'baseline-page.json');
  writeFileSync(file, bytes);
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [join(here, 'baseline-server.mjs'), file]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    child.on('exit', (code) => rej(new Error(`baseline server exited ${code}`)));
  });
  try {
    await drive(`http://127.0.0.1:${port}/devices`, {}, WARMUP_S);
    return await driveWithCpu(`http://127.0.0.1:${port}/devices`, {}, child.pid, []);
  } finally {
    await stop(child);
  }
}

async function runDriver(label, storeOptions, serverEnv, n) {
  console.log(`\n== ${label}: seeding ${n.toLocaleString()} devices`);
  const { seedMs, key, plan } = await seed(storeOptions, n);
  console.log(`seeded in ${(seedMs / 1000).toFixed(1)} s; q plan:\n  ${plan.split('\n').join('\n  ')}`);
  // An hour between check-ins: the seeded "online" devices send no heartbeats, and the
  // offline detector would otherwise flip 66k of them in the middle of a scenario.
  const appName = `svc-bench-${process.pid}`;
  const { child, port } = await startServer({ ...serverEnv, SVC_LOG_LEVEL: 'warn', SVC_DEVICE_CHECKIN_INTERVAL_S: '3600', PGAPPNAME: appName });
  const probe =
    storeOptions.databaseUrl === undefined ? undefined : await openStore({ databaseUrl: storeOptions.databaseUrl, schema: storeOptions.schema, poolSize: 1 });
  try {
    const base = `http://127.0.0.1:${port}/api/v1/devices`;
    const auth = { authorization: `Bearer ${key}` };
    const first = await fetch(base, { headers: auth });
    const firstBytes = Buffer.from(await first.arrayBuffer());
    const firstBody = JSON.parse(firstBytes.toString());
    console.log(`first page: ${firstBytes.length} bytes, total ${firstBody.total}, counts ${JSON.stringify(firstBody.counts)}`);
    const rows = [];
    const b = await baseline(firstBytes, serverEnv.SVC_DATA_DIR);
    rows.push(['baseline (bare fastify, same bytes)', b, undefined]);
    // The targets at 100k devices; other sizes are measured without them.
    const pg = label.startsWith('PostgreSQL');
    const at100k = (target) => (n === 100_000 ? target : undefined);
    const scenarios = [
      ['first page (total + counts)', base, at100k(pg ? { ratio: 0.2, p99Ms: 20 } : { rps: 1000, p99Ms: 100 })],
      ['offset 50k', `${base}?offset=${Math.min(50_000, n - 50)}`, at100k({ p99Ms: pg ? 100 : 200 })],
      ['status=offline', `${base}?status=offline`],
      ['q=0042 (substring)', `${base}?q=0042`, at100k(pg ? { ratio: 0.1 } : undefined)],
    ];
    const windows = [];
    for (const [name, url, target] of scenarios) {
      try {
        await drive(url, auth, WARMUP_S); // JIT, prepared statements, caches: not measured
        const backends = probe === undefined ? [] : await backendPids(probe.db, appName);
        const from = monoUs();
        const r = await driveWithCpu(url, auth, child.pid, backends);
        windows.push(`${name} ${from}-${monoUs()}`);
        rows.push([name, r, target]);
      } catch (e) {
        rows.push([name, { failed: e instanceof Error ? e.message : String(e) }, target]);
      }
    }
    console.log(`\n${label}, ${n.toLocaleString()} devices, ${CONNECTIONS} connections, ${DURATION_S} s each (${useWrk ? 'wrk' : 'autocannon'}):`);
    console.log(
      pin
        ? `pinned: server and baseline on CPU ${SERVER_CPU}, load generator on CPU ${LOAD_CPU}, database unpinned`
        : 'not pinned (no taskset or a single CPU)',
    );
    console.log(
      `${'scenario'.padEnd(38)} ${'req/s'.padStart(9)} ${'p99 ms'.padStart(8)} ${'vs baseline'.padStart(12)} ${'server us/req'.padStart(14)} ${'db us/req'.padStart(10)}  target`,
    );
    for (const [name, r, target] of rows) {
      const goal =
        target === undefined
          ? ''
          : [target.ratio && `>= ${target.ratio}x`, target.rps && `>= ${target.rps} req/s`, target.p99Ms && `p99 < ${target.p99Ms} ms`]
              .filter(Boolean)
              .join(', ');
      const ok =
        r.failed === undefined &&
        (target?.ratio === undefined || r.rps / b.rps >= target.ratio) &&
        (target?.rps === undefined || r.rps >= target.rps) &&
        (target?.p99Ms === undefined || r.p99Ms < target.p99Ms);
      const met = target === undefined ? '' : ok ? ' (met)' : ' (NOT met)';
      if (target !== undefined) {
        const figure = r.failed === undefined ? `${r.rps.toFixed(0)} req/s, ${(r.rps / b.rps).toFixed(3)}x, p99 ${r.p99Ms.toFixed(1)} ms` : 'not measured';
        verdicts.push(`${label} ${n.toLocaleString()}: ${name}: ${figure}; target ${goal}: ${ok ? 'met' : 'NOT met'}`);
      }
      if (r.failed !== undefined) {
        console.log(`${name.padEnd(38)} not measured: ${r.failed}${met}`);
        continue;
      }
      console.log(
        `${name.padEnd(38)} ${r.rps.toFixed(0).padStart(9)} ${r.p99Ms.toFixed(2).padStart(8)} ${(r.rps / b.rps).toFixed(3).padStart(12)} ${r.serverUs.toFixed(0).padStart(14)} ${(r.dbUs === undefined ? '' : r.dbUs.toFixed(0)).padStart(10)}  ${goal}${met}`,
      );
    }
    if (SERVER_FLAGS.includes('--cpu-prof')) console.log(`timed windows (CLOCK_MONOTONIC us, as in the server's .cpuprofile): ${windows.join('; ')}`);
    return rows;
  } finally {
    await probe?.close();
    await stop(child);
  }
}

const started = performance.now();
const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-'));
try {
  if (!full && DRIVER !== 'postgres') {
    await runDriver('embedded (PGlite)', { pgliteDir: join(dataDir, 'db') }, { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: '' }, DEVICES);
  }
  if (pgUrl && DRIVER !== 'embedded') {
    // 100k (or --devices) on both drivers, and 1M on PostgreSQL.
    const sizes = full ? [1_000_000] : quick ? [DEVICES] : [DEVICES, 1_000_000];
    for (const n of sizes) {
      const schema = `bench_${process.pid}_${n}`;
      const store = await openStore({ databaseUrl: pgUrl, schema });
      try {
        await runDriver(
          'PostgreSQL',
          { databaseUrl: pgUrl, schema },
          { SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: pgUrl, SVC_DATABASE_SCHEMA: schema, ...benchKekEnv() },
          n,
        );
      } finally {
        await sql.raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).execute(store.db);
        await store.close();
      }
    }
  } else {
    console.warn('\nPostgreSQL run skipped: set SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL');
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
console.log(`\ntargets of this run:\n  ${verdicts.length > 0 ? verdicts.join('\n  ') : 'none (targets are stated for 100k devices)'}`);
console.log(`\nbench done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
