// Fleet benchmark: one server process (dist/main.js) on PostgreSQL holding a whole fleet that
// connects per check-in (docs/server.md "Deployment and sizing"). The fleet simulator
// (apps/agent/dist/sim/main.js) is a separate process; every device has its own P-256 key,
// certificate and mTLS connection. Figures, each printed with its target and met / not met
// computed from the measurement:
//   1. BENCH_FLEET_DEVICES (100k) enrolled devices checking in every BENCH_FLEET_INTERVAL (600 s)
//      +-10 % for BENCH_FLEET_SECONDS (600 s), connecting per check-in (the agent's default):
//      check-ins/s served against the rate asked (N / interval), server RSS (< 1.5 GiB, and flat:
//      the highest sample of the last third of the phase within 1.1x of the highest of the
//      first third), check-in p99 (< 250 ms, the simulator's clock: call start to answer, the
//      TLS handshake included when the device's connection was closed), 0 failed calls.
//   2. A signed rollout to all of them (one wave, a dynamic group), started as the phase
//      starts: it completes, with exactly one accepted receipt per device.
//   3. What a check-in's handshake costs the server, against an authenticated Ping on a kept
//      connection: server CPU per call for BENCH_FLEET_KEPT_DEVICES (2,000) devices pinging on
//      kept connections, checking in on kept connections, and checking in connecting each time.
//   4. Persistent mode: server RSS per connected device (a freshly started process, its RSS
//      before the devices connect against after) against the bare-Node floor of one mTLS
//      HTTP/2 connection (bench/tls-floor.mjs, same connection count, same run): <= 1.0x.
// Enrolling 100k devices takes about ten minutes, so the fleet is kept for the next run:
// BENCH_FLEET_DIR (default ~/.cache/svc-bench/fleet-<N>) holds the server's data dir, its KEK
// file and the simulator's identity cache, and the schema bench_fleet_<N> stays in the
// database (BENCH_FLEET_FRESH=1 starts over). The device port is fixed (BENCH_FLEET_PORT,
// 18443): the identity cache is bound to the server's address. BENCH_FLEET_SIM_THREADS runs the
// fleet's simulator with --threads (default 2, or 1 on a one-core machine: its turns on two event loops), BENCH_FLEET_SIM_FLAGS adds node flags to it (e.g.
// --cpu-prof); BENCH_FLEET_SERVER_FLAGS adds node flags to the server (e.g. --cpu-prof, --trace-gc), and
// BENCH_FLEET_SERVER_LOG appends its lines that are not JSON to that file. The server's, its
// PostgreSQL backends' and the simulator's CPU per check-in are printed with the load average. Where the
// database has autovacuum off, the bench does its job on the schema (AutovacuumStandIn). Needs PostgreSQL
// (SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL); skipped loudly without it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, homedir, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { api, rollOut } from './fleet-api.mjs';
import {
  AutovacuumStandIn,
  BackendCpu,
  benchMain,
  cpuSeconds,
  cpuTimes,
  meanOf,
  measured,
  POSTGRES_NODE_FLAGS,
  serverLaunch,
  withApplicationName,
} from './measure.mjs';

const here = import.meta.dirname;
const SERVER_MAIN = resolve(here, '../dist/main.js');
const SIM_MAIN = resolve(here, '../../agent/dist/sim/main.js');
const TLS_FLOOR = resolve(here, 'tls-floor.mjs');
const N = Number(process.env.BENCH_FLEET_DEVICES ?? 100_000);
const INTERVAL_S = Number(process.env.BENCH_FLEET_INTERVAL ?? 600);
const PHASE_S = Number(process.env.BENCH_FLEET_SECONDS ?? 600);
const KEPT_N = Number(process.env.BENCH_FLEET_KEPT_DEVICES ?? 2000);
const KEPT_S = Number(process.env.BENCH_FLEET_KEPT_SECONDS ?? 30);
const PORT = Number(process.env.BENCH_FLEET_PORT ?? 18443);
const SIM_THREADS = Number(process.env.BENCH_FLEET_SIM_THREADS ?? Math.min(2, availableParallelism()));
const DIR = process.env.BENCH_FLEET_DIR ?? join(homedir(), '.cache', 'svc-bench', `fleet-${N}`);
const SCHEMA = `bench_fleet_${N}`;
const PG_URL = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const ADMIN = { email: 'bench@example.com', password: 'bench-password-123456' };
const TARGETS = { rssMiB: 1536, flat: 1.1, p99Ms: 250, keptRssRatio: 1.0 };
const PREFIX = 'fleet';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const verdict = (ok) => (ok ? 'met' : 'NOT MET');
/** `min / median / max` of some figures, for how evenly they spread over a phase. */
const spread = (xs) => {
  if (xs.length === 0) return 'none';
  const v = [...xs].sort((a, b) => a - b);
  return `min ${v[0]}, median ${v[Math.floor(v.length / 2)]}, max ${v.at(-1)} ms`;
};
const rssMiB = async (pid) => Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
/** The server's database connections carry this name, so its PostgreSQL backends' CPU is counted (BackendCpu). */
const APPLICATION_NAME = `bench-fleet-${N}`;
const stopped = (child) => new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));

async function psql(query) {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return (await c.query(query)).rows;
  } finally {
    await c.end();
  }
}

/**
 * `node [flags] file args`; every JSON line of its stdout and stderr goes to `onLine`, other
 * lines are kept (the last 50) and, with `textLog`, appended to that file (e.g. the output of
 * --trace-gc in BENCH_FLEET_SERVER_FLAGS, with BENCH_FLEET_SERVER_LOG).
 */
function start(file, args, env, onLine, flags = [], textLog = undefined) {
  const child = spawn(process.execPath, [...flags, file, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const text = [];
  const log = textLog === undefined ? undefined : createWriteStream(textLog, { flags: 'a' });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => {
      try {
        onLine(JSON.parse(l));
      } catch {
        text.push(l);
        if (text.length > 50) text.shift();
        log?.write(`${Date.now()} ${l}\n`);
      }
    });
  }
  return { child, text };
}

/** The fleet's home: kept from an earlier run when its schema still exists, else made afresh. */
async function prepareHome() {
  const [{ exists }] = await psql(`SELECT EXISTS (SELECT 1 FROM information_schema.schemata WHERE schema_name = '${SCHEMA}') AS exists`);
  if (process.env.BENCH_FLEET_FRESH === '1' || !exists || !existsSync(join(DIR, 'kek'))) {
    await psql(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
    await rm(DIR, { recursive: true, force: true });
    await mkdir(join(DIR, 'data'), { recursive: true, mode: 0o700 });
    await writeFile(join(DIR, 'kek'), randomBytes(32), { mode: 0o600 });
    return false;
  }
  return true;
}

/** The server as a PostgreSQL host runs it (start script's environment and flags), plus BENCH_FLEET_SERVER_FLAGS (e.g. --cpu-prof). */
const LAUNCH = serverLaunch(await readFile(resolve(here, '../package.json'), 'utf8'), 'postgres');
const SERVER_FLAGS = [...LAUNCH.flags, ...(process.env.BENCH_FLEET_SERVER_FLAGS ?? '').split(' ').filter((f) => f !== '')];

/**
 * `flags`: the PostgreSQL host's by default. The persistent-mode figure runs the server with the
 * flags of the bare-Node floor it is compared with (none): --max-semi-space-size=64 lets V8 keep
 * up to 3 x 64 MiB of young generation after a burst of allocation (2,000 handshakes at once),
 * headroom that does not grow with the connections but would be counted against them.
 */
async function startServer(flags = SERVER_FLAGS) {
  let http;
  let device;
  const s = start(
    SERVER_MAIN,
    [],
    {
      ...LAUNCH.env,
      SVC_DATA_DIR: join(DIR, 'data'),
      SVC_KEK_FILE: join(DIR, 'kek'),
      SVC_DATABASE_URL: withApplicationName(PG_URL, APPLICATION_NAME),
      SVC_DATABASE_SCHEMA: SCHEMA,
      SVC_HTTP_ADDR: '127.0.0.1:0',
      SVC_DEVICE_ADDR: `127.0.0.1:${PORT}`,
      SVC_ADMIN_EMAIL: ADMIN.email,
      SVC_ADMIN_PASSWORD: ADMIN.password,
      SVC_LOG_LEVEL: 'info',
      SVC_DEVICE_MAX_CONNECTIONS: String(Math.max(N, KEPT_N) + 1000),
      // the interval the fleet checks in at, as a deployment configures it: with the default
      // (60 s) the offline detector flips every device not seen for 150 s, most of the fleet
      SVC_DEVICE_CHECKIN_INTERVAL_S: String(INTERVAL_S),
    },
    (j) => {
      const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(j.msg ?? '');
      if (m) http = m[1];
      if (j.msg === 'device channel listening') device = `127.0.0.1:${j.port}`;
    },
    flags,
    process.env.BENCH_FLEET_SERVER_LOG,
  );
  // bound by progress: a start on a large schema (vacuum, migrations) logs as it goes
  for (let i = 0; i < 3000 && !(http && device); i++) {
    if (s.child.exitCode !== null) throw new Error(`server exited at start: ${s.text.slice(-5).join(' | ')}`);
    await sleep(100);
  }
  if (!(http && device)) throw new Error('server did not start within 300 s');
  const res = await fetch(`${http}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
  if (!res.ok) throw new Error(`login: ${res.status}`);
  return { ...s, http, device, cookie: res.headers.get('set-cookie').split(';')[0] };
}

/** A simulator run; `lines` are its JSON lines with the time they arrived. */
function startSim(server, token, o) {
  const lines = [];
  const sim = start(
    SIM_MAIN,
    [
      ...['--server', server.device, '--server-ca', join(DIR, 'data', 'ca', 'server', 'ca.pem'), '--token', token],
      ...['--devices', String(o.devices), '--prefix', o.prefix, '--identities', join(DIR, `${o.prefix}.identities`)],
      ...['--connection', o.connection, '--interval', String(o.intervalS), '--jitter', String(o.jitter ?? 0), '--duration', String(o.durationS)],
      ...['--ping-first', String(o.pingFirstS ?? 0), '--idle-close', String(o.idleCloseS ?? 30), '--stats-every', String(o.statsEveryS ?? 10)],
      ...['--concurrency', '256', '--max-in-flight', String(o.maxInFlight ?? 512), '--max-errors', String(Number.MAX_SAFE_INTEGER)],
      ...((o.threads ?? 1) > 1 ? ['--threads', String(o.threads)] : []),
    ],
    {},
    (j) => lines.push({ ...j, t: Date.now() }),
    // a young generation of up to 64 MiB per semi-space: the simulator allocates per connection
    // and receipt, and scavenges cost per survivor, not per garbage (3.45-3.99 -> 3.11 ms of
    // simulator CPU per check-in at 20k devices); the server's PostgreSQL hosts run with the same
    ['--expose-gc', ...POSTGRES_NODE_FLAGS, ...(process.env.BENCH_FLEET_SIM_FLAGS ?? '').split(' ').filter((f) => f !== '')],
  );
  return {
    ...sim,
    lines,
    async waitFor(what, pred, idleMs = 120_000) {
      let seen = lines.length;
      let moved = Date.now();
      for (;;) {
        const hit = lines.find(pred);
        if (hit) return hit;
        if (sim.child.exitCode !== null) throw new Error(`simulator exited before ${what}: ${sim.text.slice(-3).join(' | ')}`);
        if (lines.length !== seen) [seen, moved] = [lines.length, Date.now()];
        if (Date.now() - moved > idleMs) throw new Error(`simulator: no line for ${idleMs / 1000} s waiting for ${what}`);
        await sleep(200);
      }
    },
    async stop() {
      if (sim.child.exitCode === null) sim.child.kill('SIGINT');
      await stopped(sim.child);
      const summary = lines.find((l) => l.event === 'summary');
      measured(summary !== undefined, `simulator ${o.prefix}: no summary line (${sim.text.slice(-3).join(' | ')})`);
      return summary;
    },
  };
}

/** An enrollment token good for `uses` devices. */
async function tokenFor(server, name, uses) {
  return (await api(server, 'POST', '/enroll-tokens', { name, max_uses: uses }, server.cookie)).json.token;
}

// --- 1. and 2.: the fleet, per check-in, with a rollout ------------------------------------------

async function fleetPhase(server) {
  const token = await tokenFor(server, `fleet-${Date.now()}`, N);
  const sim = startSim(server, token, {
    devices: N,
    prefix: PREFIX,
    connection: 'per-check-in',
    intervalS: INTERVAL_S,
    jitter: 10,
    threads: SIM_THREADS,
    // the phase, then one interval more so that every device meets the rollout at least once
    durationS: PHASE_S + INTERVAL_S + 60,
    statsEveryS: 10,
  });
  // enrollment (or the identity cache) first: minutes for a fresh 100k fleet, its progress printed
  const enrolled = await sim.waitFor('the fleet to enroll', (l) => l.event === 'enrolled', 300_000);
  measured(enrolled.devices === N, `the simulator enrolled ${enrolled.devices} of ${N} devices (last error: ${enrolled.last_error})`);
  console.log(
    `fleet: ${N} devices (${enrolled.cached} from the identity cache, ${enrolled.enrolled_now} enrolled now${enrolled.enrollments_per_s ? `, ${enrolled.enrollments_per_s}/s` : ''}); simulator ${enrolled.rss_per_device_kib} KiB RSS per device`,
  );
  const pid = server.child.pid;
  const t0 = Date.now();
  const cpu0 = await cpuTimes(pid);
  const simCpu0 = await cpuTimes(sim.child.pid);
  const postgres = new BackendCpu(PG_URL, APPLICATION_NAME);
  await postgres.start();
  const checkIns0 = sim.lines.filter((l) => l.event === 'stats').at(-1)?.check_ins ?? 0;
  const load = [];
  const rss = [];
  const sampler = setInterval(() => {
    load.push(loadavg()[0]);
    rssMiB(pid).then(
      (v) => rss.push({ t: Date.now() - t0, v }),
      () => undefined,
    );
  }, 5000);
  // the rollout starts with the phase: a dynamic group of the whole fleet, one wave
  const tag = `${Date.now()}`;
  const { started } = await rollOut(server, server.cookie, [], tag, { filter: `name ~ "${PREFIX}-"`, waves: [{ name: 'all', percent: 100 }] });
  const txId = started.transaction_id;
  measured(typeof txId === 'string', `rollout start answered no transaction id: ${JSON.stringify(started)}`);
  console.log(`fleet: rollout ${started.id} (transaction ${txId}) started ${((Date.now() - t0) / 1000).toFixed(1)} s into the phase`);
  await sleep(Math.max(0, t0 + PHASE_S * 1000 - Date.now()));
  clearInterval(sampler);
  const phaseLines = sim.lines.filter((l) => l.event === 'stats' && l.t > t0 + 10_000 && l.t <= t0 + PHASE_S * 1000);
  const checkInsPerS = meanOf(
    phaseLines.map((l) => l.check_ins_per_s),
    'check-ins/s over the phase',
  );
  const checkInsInPhase = Math.max(1, (phaseLines.at(-1)?.check_ins ?? 0) - checkIns0);
  const receiptsInPhase = phaseLines.at(-1)?.receipts ?? 0;
  const perCheckIn = (t0, t1) => ({
    ms: ((t1.user + t1.system - t0.user - t0.system) * 1000) / checkInsInPhase,
    systemMs: ((t1.system - t0.system) * 1000) / checkInsInPhase,
  });
  const cpu = perCheckIn(cpu0, await cpuTimes(pid));
  const simCpu = perCheckIn(simCpu0, await cpuTimes(sim.child.pid));
  const pgCpu = await postgres.stop();
  const postgresPerCheckInMs = (pgCpu.seconds * 1000) / checkInsInPhase;

  // the rollout completes: bound by progress (accepted receipts), not by a fixed time
  const count = async () => Number((await psql(`SELECT count(*) AS n FROM "${SCHEMA}".release_receipts WHERE deployment_id = '${txId}'`))[0].n);
  let receipts = await count();
  let moved = Date.now();
  let state = 'running';
  while (state === 'running' && Date.now() - moved < 120_000 && sim.child.exitCode === null) {
    await sleep(2000);
    state = (await api(server, 'GET', `/release-transactions/${txId}`, undefined, server.cookie)).json.state;
    const now = await count();
    if (now !== receipts) [receipts, moved] = [now, Date.now()];
  }
  const summary = await sim.stop();
  const [exact] = await psql(
    `SELECT count(*) AS receipts, count(DISTINCT device_name) AS devices FROM "${SCHEMA}".release_receipts WHERE deployment_id = '${txId}'`,
  );
  return {
    checkInsPerS,
    cpu,
    simCpu,
    postgresPerCheckInMs,
    postgresBackends: pgCpu.backends,
    checkInsInPhase,
    receiptsInPhase,
    load,
    rss,
    summary,
    state,
    receipts: Number(exact.receipts),
    devices: Number(exact.devices),
    phaseLines,
  };
}

// --- 3. and 4.: kept connections against a connection per check-in -------------------------------

/** Established TCP connections on the server's device port. */
function established() {
  return new Promise((done) => {
    const ss = spawn('ss', ['-Htn', 'state', 'established', `( sport = :${PORT} )`], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    ss.stdout.on('data', (d) => (out += d));
    ss.on('close', () => done(out.split('\n').filter((l) => l.trim() !== '').length));
  });
}

/** Server CPU per call over `seconds` of a simulator run already in its steady state. */
async function cpuPerCall(server, sim, counter, seconds) {
  const pid = server.child.pid;
  const last = () => sim.lines.filter((l) => l.event === 'stats').at(-1)?.[counter] ?? 0;
  const [c0, s0, n0] = [await cpuSeconds(pid), await cpuSeconds(sim.child.pid), last()];
  await sleep(seconds * 1000);
  const [c1, s1, n1] = [await cpuSeconds(pid), await cpuSeconds(sim.child.pid), last()];
  measured(n1 > n0, `no ${counter} counted in ${seconds} s`);
  return { ms: ((c1 - c0) * 1000) / (n1 - n0), simMs: ((s1 - s0) * 1000) / (n1 - n0), calls: n1 - n0, load: loadavg()[0] };
}

async function keptPhase(server) {
  const token = await tokenFor(server, `kept-${Date.now()}`, 2 * KEPT_N);
  // persistent: pings first (the baseline), then check-ins, all on kept connections
  const interval = Math.max(2, Math.ceil(KEPT_N / 200));
  const rss0 = await rssMiB(server.child.pid);
  const kept = startSim(server, token, {
    devices: KEPT_N,
    prefix: 'kept',
    connection: 'persistent',
    intervalS: interval,
    pingFirstS: KEPT_S + interval + 5,
    durationS: 2 * (KEPT_S + interval + 5),
    statsEveryS: 1,
  });
  await kept.waitFor('the kept fleet to connect', (l) => l.event === 'connected', 600_000);
  await sleep((interval + 2) * 1000);
  const rssConnected = await rssMiB(server.child.pid);
  const connected = await established();
  const ping = await cpuPerCall(server, kept, 'pings', KEPT_S);
  await kept.waitFor('check-ins on kept connections', (l) => l.event === 'stats' && l.mode === 'check-in' && l.check_ins > 0);
  await sleep((interval + 1) * 1000);
  const keptCheckIn = await cpuPerCall(server, kept, 'check_ins', KEPT_S);
  const keptSummary = await kept.stop();
  // per check-in: the same devices, each connection closed a second after its call
  const fresh = startSim(server, token, {
    devices: KEPT_N,
    prefix: 'kept',
    connection: 'per-check-in',
    idleCloseS: 1,
    intervalS: interval,
    durationS: KEPT_S + 3 * interval + 10,
    statsEveryS: 1,
  });
  await fresh.waitFor('per-check-in turns', (l) => l.event === 'stats' && l.check_ins > 0, 600_000);
  await sleep((interval + 1) * 1000);
  const freshCheckIn = await cpuPerCall(server, fresh, 'check_ins', KEPT_S);
  const freshSummary = await fresh.stop();

  // the bare-Node floor of one mTLS HTTP/2 connection, as many connections, now
  const floorOut = await new Promise((done, fail) => {
    const c = spawn(process.execPath, [TLS_FLOOR], { env: { ...process.env, BENCH_FLOOR_CONNECTIONS: String(KEPT_N) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('close', (code) => (code === 0 ? done(out) : fail(new Error(`tls-floor exited ${code}`))));
  });
  const floor = /([\d.]+) KiB RSS per connection/.exec(floorOut);
  measured(floor !== null, `tls-floor printed no figure: ${floorOut.trim()}`);
  return {
    ping,
    keptCheckIn,
    freshCheckIn,
    connected,
    rssPerDeviceKiB: ((rssConnected - rss0) * 1024) / Math.max(1, connected),
    floorKiB: Number(floor[1]),
    keptSummary,
    freshSummary,
  };
}

await benchMain('fleet', async () => {
  if (!PG_URL) {
    console.warn('fleet bench: SKIPPED: needs PostgreSQL (SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL)');
    return;
  }
  const kept = await prepareHome();
  console.log(
    `fleet bench: ${N} devices, check-in every ${INTERVAL_S} s +-10 % for ${PHASE_S} s, one server process (PostgreSQL, schema ${SCHEMA}, ${kept ? 'fleet kept from an earlier run' : 'fresh fleet'}; ${DIR})`,
  );
  const t = Date.now();
  const autovacuum = new AutovacuumStandIn(PG_URL, SCHEMA);
  if (await autovacuum.start())
    console.log(
      `fleet bench: autovacuum is off on this PostgreSQL: the bench does its job on ${SCHEMA} (VACUUM ANALYZE of the tables past its thresholds, every minute)`,
    );
  let server = await startServer();
  try {
    const f = await fleetPhase(server);
    const asked = N / INTERVAL_S;
    const third = (PHASE_S * 1000) / 3;
    const first = Math.max(...f.rss.filter((s) => s.t <= third).map((s) => s.v));
    const lastThird = Math.max(...f.rss.filter((s) => s.t >= 2 * third).map((s) => s.v));
    const peak = Math.max(...f.rss.map((s) => s.v));
    measured(Number.isFinite(first) && Number.isFinite(lastThird), `server RSS: too few samples (${f.rss.length})`);
    const s = f.summary;
    console.log(
      `check-ins: ${f.checkInsPerS.toFixed(1)}/s served of ${asked.toFixed(1)}/s asked (ratio ${(f.checkInsPerS / asked).toFixed(2)}x); ${s.skipped} turns skipped with the simulator's window full; server CPU ${f.cpu.ms.toFixed(2)} ms per check-in (${f.cpu.systemMs.toFixed(2)} of it in the kernel; receipts of the rollout included: ${f.receiptsInPhase} receipts, ${f.checkInsInPhase} check-ins), its PostgreSQL backends ${f.postgresPerCheckInMs.toFixed(2)} ms (${f.postgresBackends} backends), simulator ${f.simCpu.ms.toFixed(2)} ms (${f.simCpu.systemMs.toFixed(2)} in the kernel); load average ${Math.min(...f.load).toFixed(1)}-${Math.max(...f.load).toFixed(1)}`,
    );
    console.log(`server RSS: peak ${peak.toFixed(0)} MiB; target < ${TARGETS.rssMiB} MiB: ${verdict(peak < TARGETS.rssMiB)}`);
    console.log(
      `server RSS flat: highest of the last third ${lastThird.toFixed(0)} MiB vs of the first third ${first.toFixed(0)} MiB, ratio ${(lastThird / first).toFixed(2)}x; target <= ${TARGETS.flat}x: ${verdict(lastThird / first <= TARGETS.flat)}`,
    );
    console.log(
      `check-in latency: p50 ${s.checkInP50Ms} ms, p99 ${s.checkInP99Ms} ms (the simulator's clock, the run's successful check-ins; the p99 of each 10 s of the phase: ${spread(f.phaseLines.map((l) => l.check_in_p99_ms).filter((v) => typeof v === 'number'))}); target p99 < ${TARGETS.p99Ms} ms: ${verdict(typeof s.checkInP99Ms === 'number' && s.checkInP99Ms < TARGETS.p99Ms)}`,
    );
    console.log(`failed calls: ${s.errors}${s.lastError ? ` (last: ${s.lastError})` : ''}; target 0: ${verdict(s.errors === 0)}`);
    const complete = f.state === 'committed' && f.receipts === N && f.devices === N;
    console.log(
      `rollout to ${N} devices: ${f.state}, ${f.receipts} receipts accepted from ${f.devices} devices (${s.duplicates} sent again and answered as duplicates); target every receipt accepted exactly once and the rollout complete: ${verdict(complete)}`,
    );
    // a process that has not served the fleet: its RSS before the kept connections is a baseline
    server.child.kill('SIGTERM');
    await stopped(server.child);
    server = await startServer(SERVER_FLAGS.filter((f) => !POSTGRES_NODE_FLAGS.includes(f)));
    const k = await keptPhase(server);
    console.log(
      `handshake cost: server CPU ${k.freshCheckIn.ms.toFixed(2)} ms per check-in connecting each time vs ${k.keptCheckIn.ms.toFixed(2)} ms on a kept connection (the handshake: ${(k.freshCheckIn.ms - k.keptCheckIn.ms).toFixed(2)} ms); authenticated Ping on a kept connection ${k.ping.ms.toFixed(2)} ms: ratio ${(k.freshCheckIn.ms / k.ping.ms).toFixed(1)}x; simulator CPU ${k.freshCheckIn.simMs.toFixed(2)} ms per check-in connecting, ${k.keptCheckIn.simMs.toFixed(2)} ms kept, ${k.ping.simMs.toFixed(2)} ms per Ping; load average ${k.ping.load.toFixed(1)}, ${k.keptCheckIn.load.toFixed(1)}, ${k.freshCheckIn.load.toFixed(1)} (${KEPT_N} devices; p99 ${k.freshSummary.checkInP99Ms} ms connecting, ${k.keptSummary.checkInP99Ms} ms kept)`,
    );
    console.log(
      `persistent mode: server RSS ${k.rssPerDeviceKiB.toFixed(1)} KiB per connected device (${k.connected} connections) vs bare-Node floor ${k.floorKiB.toFixed(1)} KiB per connection, ratio ${(k.rssPerDeviceKiB / k.floorKiB).toFixed(2)}x; target <= ${TARGETS.keptRssRatio}x: ${verdict(k.rssPerDeviceKiB / k.floorKiB <= TARGETS.keptRssRatio)}`,
    );
  } finally {
    server.child.kill('SIGTERM');
    await stopped(server.child);
    await autovacuum.stop();
    console.log(
      `fleet bench took ${((Date.now() - t) / 1000).toFixed(0)} s (the fleet is kept in ${DIR} and schema ${SCHEMA}; BENCH_FLEET_FRESH=1 starts over)`,
    );
  }
});
