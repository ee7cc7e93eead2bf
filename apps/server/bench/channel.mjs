// Device-channel benchmark (docs/device-channel.md "Benchmark"). Server processes (dist/main.js),
// the fleet simulator (apps/agent/dist/sim/main.js) and HAProxy as separate processes, real
// mTLS per device. Every figure is printed with its baseline measured in the same run, the
// ratio, the target and "met"/"not met" computed from the measurement:
//   1. enrollment/s (CSR -> certificate, PostgreSQL): Enroll calls with prebuilt CSRs against
//      the same calls refused at the token check (same TLS, CSR parsing and signature check,
//      token read: everything but issuance and the unit of work). Target >= 500/s.
//   2. check-ins/s at BENCH_CHANNEL_DEVICES (10k) connected devices against authenticated Pings
//      over the same connections (same TLS, mTLS peer check and device row read). Target >= 0.8x.
//   3. server RSS per connected device (RSS with the fleet connected minus before). Target <= 40 KiB.
//   4. scale-out: 1, 2 and 3 server processes on one PostgreSQL behind HAProxy (TCP), the
//      simulator's BENCH_SCALE_DEVICES (10k) devices spread over them: check-ins/s per process
//      count (baseline: one process), and a signed rollout in three waves to all devices with
//      one process killed mid-rollout at the largest count: receipts accepted exactly once.
// Receipt acceptance itself is measured by bench/receipts.mjs.
// BENCH_CHANNEL_PHASES (default enroll,fleet,scale,agent) runs only the listed phases: `enroll`
// (figure 1), `fleet` (figures 2 and 3), `scale` (figure 4), `agent` (agent RSS at rest); e.g.
// BENCH_CHANNEL_PHASES=enroll for the enrollment figure alone. BENCH_SERVER_FLAGS are node flags
// for the server processes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/enroll-prof`; bench/cpuprofile.mjs
// sums a timed window of the profile by function). Next to each enrollment rate the bench
// prints the server's CPU per call (user + system from /proc/<pid>/stat over the timed calls):
// it moves far less with the machine's load than the rates.
// Needs PostgreSQL (SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL; fresh schemas, dropped
// after); without it the single-process figures run on embedded PGlite and scale-out is
// skipped. Without /usr/sbin/haproxy scale-out is skipped (both say so loudly).
// BENCH_CHANNEL_ONLY=rss runs figure 3 alone (no enrollment figure, no check-in phase, no
// scale-out, no agent at rest): the fleet connects and pings for one interval plus 2 s, then the
// server's RSS per connected device is printed.
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes, webcrypto } from 'node:crypto';
import pg from 'pg';
import * as x509 from '@peculiar/x509';
import { credentials, Metadata } from '@grpc/grpc-js';
import { EnrollmentServiceClient } from '@svc/device-proto';
import { api, rollOut } from './fleet-api.mjs';
import { cpuSeconds, meanOf, measured } from './measure.mjs';
import { benchKekEnv } from './kek.mjs';

const here = import.meta.dirname;
const SERVER_MAIN = resolve(here, '../dist/main.js');
const AGENT_DIR = resolve(here, '../../agent/dist');
const HAPROXY = '/usr/sbin/haproxy';
const N = Number(process.env.BENCH_CHANNEL_DEVICES ?? 10_000);
const SCALE_N = Number(process.env.BENCH_SCALE_DEVICES ?? N);
const SCALE_PROCESSES = (process.env.BENCH_SCALE_PROCESSES ?? '1,2,3')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const ENROLL_N = Number(process.env.BENCH_ENROLL_COUNT ?? 3000);
const PHASE_S = Number(process.env.BENCH_CHANNEL_SECONDS ?? 20);
// Every device asks once per interval: N/500 s (20 s at 10k), 500 calls/s of demand, more than
// one process serves, so the rates are capacity (closed loop, calls in flight bounded).
const intervalFor = (n) => Number(process.env.BENCH_CHANNEL_INTERVAL ?? Math.max(1, Math.ceil(n / 500)));
const ONLY_RSS = process.env.BENCH_CHANNEL_ONLY === 'rss';
const PG_URL = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const ADMIN = { email: 'bench@example.com', password: 'bench-password-123456' };
const TARGETS = { enrollPerS: 500, checkInRatio: 0.8, rssKiB: 40 };
const PHASES = new Set(ONLY_RSS ? ['fleet'] : (process.env.BENCH_CHANNEL_PHASES ?? 'enroll,fleet,scale,agent').split(',').map((p) => p.trim()));
const schemas = [];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssMiB = async (pid) => Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const verdict = (ok) => (ok ? 'met' : 'NOT MET');

/** Spawns `node file args`, handing every stdout/stderr JSON line to `onLine`. */
function start(file, args, env, onLine, nodeFlags = []) {
  const child = spawn(process.execPath, [...nodeFlags, file, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => {
      try {
        onLine(JSON.parse(l));
      } catch {
        if (process.env.BENCH_VERBOSE) console.error(l);
      }
    });
  }
  return child;
}

const stopped = (child) => new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));

async function startServer(dataDir, schema) {
  let http, device;
  const child = start(
    SERVER_MAIN,
    [],
    {
      SVC_DATA_DIR: dataDir,
      SVC_HTTP_ADDR: '127.0.0.1:0',
      SVC_DEVICE_ADDR: '127.0.0.1:0',
      SVC_ADMIN_EMAIL: ADMIN.email,
      SVC_ADMIN_PASSWORD: ADMIN.password,
      SVC_LOG_LEVEL: 'info',
      ...(PG_URL ? { SVC_DATABASE_URL: PG_URL, SVC_DATABASE_SCHEMA: schema, ...benchKekEnv() } : { SVC_DATABASE_URL: '' }),
    },
    (j) => {
      const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(j.msg ?? '');
      if (m) http = m[1];
      if (j.msg === 'device channel listening') device = `127.0.0.1:${j.port}`;
    },
    (process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean),
  );
  for (let i = 0; i < 900 && !(http && device); i++) await sleep(100);
  if (!(http && device)) throw new Error('server did not start');
  return { child, http, device };
}

async function login(s) {
  const { res } = await api(s, 'POST', '/auth/login', ADMIN);
  return res.headers.get('set-cookie').split(';')[0];
}

// --- 1. enrollment --------------------------------------------------------------------------

/** `count` P-256 keys and CSRs (CN bench-enroll-N), made before the clock starts. */
async function prebuiltCsrs(count, prefix) {
  const alg = { name: 'ECDSA', namedCurve: 'P-256' };
  const out = [];
  for (let i = 0; i < count; i++) {
    const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
    const name = `${prefix}-${String(i).padStart(6, '0')}`;
    const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: `CN=${name}`, keys, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } });
    out.push({ name, csrDer: Buffer.from(csr.rawData) });
  }
  return out;
}

/**
 * Enroll calls for every prebuilt CSR, `concurrency` at a time over 4 connections; rate,
 * failures and the CPU the server process `pid` used per call meanwhile.
 */
async function enrollAll(addr, serverCaPem, token, csrs, pid, concurrency = 64) {
  const opts = { 'grpc.ssl_target_name_override': 'device-channel.svc.internal', 'grpc.default_authority': 'device-channel.svc.internal' };
  const lanes = Array.from(
    { length: 4 },
    () => new EnrollmentServiceClient(addr, credentials.createSsl(Buffer.from(serverCaPem)), { ...opts, 'grpc.use_local_subchannel_pool': 1 }),
  );
  // open the connections first: the handshakes are not what is measured
  await Promise.all(lanes.map((l) => new Promise((r) => l.waitForReady(Date.now() + 10_000, r))));
  let next = 0;
  let ok = 0;
  let refused = 0;
  let lastError;
  const cpu0 = await cpuSeconds(pid);
  const mono0 = process.hrtime.bigint() / 1000n;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < csrs.length) {
        const i = next++;
        const c = csrs[i];
        await new Promise((r) =>
          lanes[i % lanes.length].enroll(
            { token, deviceName: c.name, csrDer: c.csrDer, inventory: { agentVersion: 'bench', profile: 'linux-arm64', product: 'bench', slots: [] } },
            new Metadata(),
            { deadline: Date.now() + 60_000 },
            (err) => {
              if (err) {
                refused += 1;
                lastError = err.details;
              } else ok += 1;
              r();
            },
          ),
        );
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const window = [mono0, process.hrtime.bigint() / 1000n];
  const cpuMsPerCall = (((await cpuSeconds(pid)) - cpu0) * 1000) / csrs.length;
  for (const l of lanes) l.close();
  return { ok, refused, perS: csrs.length / seconds, cpuMsPerCall, window, lastError };
}

async function enrollmentFigure(s, cookie, dataDir) {
  const serverCaPem = await readFile(join(dataDir, 'ca/server/ca.pem'), 'utf8');
  // the tenant's CA exists before the clock starts (its creation is once per tenant)
  const warm = (await api(s, 'POST', '/enroll-tokens', { name: 'bench-warm', max_uses: 1 }, cookie)).json.token;
  await enrollAll(s.device, serverCaPem, warm, await prebuiltCsrs(1, 'bench-warm'), s.child.pid, 1);
  const csrs = await prebuiltCsrs(ENROLL_N, 'bench-enroll');
  // baseline: a well-formed token that does not exist (same CSR checks, one token read, refused)
  const base = await enrollAll(s.device, serverCaPem, `svce_00000000_${'A'.repeat(43)}`, csrs, s.child.pid);
  const token = (await api(s, 'POST', '/enroll-tokens', { name: 'bench-enroll', max_uses: ENROLL_N }, cookie)).json.token;
  const real = await enrollAll(s.device, serverCaPem, token, csrs, s.child.pid);
  return { base, real };
}

// --- 2./3. connected fleet ------------------------------------------------------------------

/** The simulator: enrolls `n` devices, then pings for `pingS` seconds, then checks in. */
function startSim(server, serverCaFile, token, n, prefix, pingS, interval) {
  const lines = [];
  const child = start(
    join(AGENT_DIR, 'sim/main.js'),
    [
      ...['--server', server, '--token', token, '--devices', String(n), '--interval', String(interval)],
      ...['--server-ca', serverCaFile, '--prefix', prefix, '--concurrency', '64', '--stats-every', '1', '--ping-first', String(pingS)],
    ],
    {},
    (j) => lines.push({ ...j, t: Date.now() }),
  );
  return {
    child,
    lines,
    stats: () => lines.filter((l) => l.event === 'stats'),
    async enrolled() {
      while (!lines.some((l) => l.event === 'enrolled')) {
        if (child.exitCode !== null) throw new Error('simulator exited before enrolling');
        await sleep(200);
      }
      return lines.find((l) => l.event === 'enrolled');
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGINT');
      await stopped(child);
    },
  };
}

/** Established TCP connections whose local port is one of `ports` (the servers' device ports). */
function established(ports) {
  return new Promise((resolveCount) => {
    const filter = ports.map((p) => `sport = :${p}`).join(' or ');
    const ss = spawn('ss', ['-Htn', 'state', 'established', `( ${filter} )`], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    ss.stdout.on('data', (d) => (out += d));
    ss.on('close', () => resolveCount(out.split('\n').filter((l) => l.trim() !== '').length));
  });
}

/**
 * Pings then check-ins of `n` devices on `server`; RSS of `pids` before the simulator and once
 * its devices are connected, divided by the connections the servers hold (`ports`): a device
 * connects at its first call, and a turn that finds the simulator's in-flight window full is
 * skipped, so on a slow server not every device is connected after one interval.
 */
async function fleetFigures(server, serverCaFile, token, n, prefix, pids, ports) {
  const interval = intervalFor(n);
  const phase = Math.max(PHASE_S, interval + 10);
  const rss0 = (await Promise.all(pids.map(rssMiB))).reduce((a, b) => a + b, 0);
  const sim = startSim(server, serverCaFile, token, n, prefix, phase + interval + 2, interval);
  const enrolled = await sim.enrolled();
  measured(enrolled.devices === n, `the simulator enrolled ${enrolled.devices} of ${n} devices (last error: ${enrolled.last_error})`);
  // the simulator opens every device's connection, then starts its turns (pings first)
  while (!sim.lines.some((l) => l.event === 'connected')) {
    if (sim.child.exitCode !== null) throw new Error('simulator exited before connecting');
    await sleep(200);
  }
  const tPing = Date.now();
  // the first interval connects the fleet (staggered); rates count after it
  await sleep((interval + 2 + (ONLY_RSS ? 0 : phase)) * 1000);
  const rssConnected = (await Promise.all(pids.map(rssMiB))).reduce((a, b) => a + b, 0);
  const connected = await established(ports);
  if (ONLY_RSS) return { sim, connected, rssPerDeviceKiB: ((rssConnected - rss0) * 1024) / Math.max(1, connected), rss0, rssConnected };
  const tCheck = Date.now() + interval * 1000;
  await sleep((interval + phase) * 1000);
  const stats = sim.stats();
  const ping = meanOf(
    stats.filter((l) => l.mode === 'ping' && l.t > tPing + (interval + 1) * 1000).map((l) => l.pings_per_s),
    `Ping/s of ${n} simulated devices`,
  );
  const checkIn = meanOf(
    stats.filter((l) => l.mode === 'check-in' && l.t > tCheck).map((l) => l.check_ins_per_s),
    `check-ins/s of ${n} simulated devices`,
  );
  measured(ping > 0 && checkIn > 0, `${n} simulated devices: ${ping} Ping/s, ${checkIn} check-ins/s (last error: ${stats.at(-1)?.last_error})`);
  const last = stats.at(-1) ?? {};
  return {
    sim,
    enrolled,
    ping,
    checkIn,
    connected,
    rssPerDeviceKiB: ((rssConnected - rss0) * 1024) / Math.max(1, connected),
    errors: last.errors ?? 0,
    skipped: last.skipped ?? 0,
    lastError: last.last_error,
    simRss: last.rss_mb,
  };
}

// --- 4. scale-out ---------------------------------------------------------------------------

async function startHaproxy(dir, backends, connections) {
  const { startHaproxy: startLb } = await import('../../e2e/dist/haproxy.js');
  return startLb({ dir, backends, connections });
}

async function psql(query) {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    return (await c.query(query)).rows;
  } finally {
    await c.end();
  }
}

async function scaleOut(root, processes, n) {
  const schema = `bench_scale_${processes}_${randomBytes(4).toString('hex')}`;
  schemas.push(schema);
  const dir = join(root, `scale-${processes}`);
  const dataDir = join(dir, 'server');
  await mkdir(dir, { recursive: true });
  const servers = [await startServer(dataDir, schema)];
  let lb;
  let sim;
  try {
    for (let i = 1; i < processes; i++) servers.push(await startServer(dataDir, schema));
    lb = await startHaproxy(
      dir,
      servers.map((s) => s.device),
      n + 100,
    );
    const cookie = await login(servers[0]);
    const token = (await api(servers[0], 'POST', '/enroll-tokens', { name: `scale-${processes}`, max_uses: n }, cookie)).json.token;
    const f = await fleetFigures(
      lb.addr,
      join(dataDir, 'ca/server/ca.pem'),
      token,
      n,
      `s${processes}`,
      servers.map((s) => s.child.pid),
      servers.map((s) => s.device.split(':')[1]),
    );
    sim = f.sim;
    const spread = (await lb.stats()).map((b) => b.current);
    // a signed rollout in three waves to every device; at the largest count one process is killed mid-rollout
    const names = Array.from({ length: n }, (_, i) => `s${processes}-${String(i).padStart(6, '0')}`);
    const t0 = Date.now();
    const rollout = (await rollOut(servers[0], cookie, names, `scale${processes}`)).started;
    const tx = rollout.transaction_id;
    const kill = processes >= 2 && processes === Math.max(...SCALE_PROCESSES);
    let killedAt;
    const window = Math.max(Number(process.env.BENCH_ROLLOUT_WINDOW ?? 300), 4 * intervalFor(n));
    let state;
    let accepted = 0;
    for (let i = 0; i < window * 2; i++) {
      await sleep(500);
      accepted = Number((await psql(`SELECT count(*) AS n FROM "${schema}".release_receipts WHERE deployment_id = '${tx}'`))[0].n);
      if (kill && killedAt === undefined && accepted >= n / 20) {
        killedAt = accepted;
        servers[1].child.kill('SIGKILL');
      }
      state = (await api(servers[0], 'GET', `/release-transactions/${tx}`, undefined, cookie)).json.state;
      if (state !== 'running') break;
    }
    const seconds = (Date.now() - t0) / 1000;
    const [dup] = await psql(
      `SELECT count(*) AS receipts, count(DISTINCT device_name) AS devices FROM "${schema}".release_receipts WHERE deployment_id = '${tx}'`,
    );
    const waves = (await api(servers[0], 'GET', `/rollouts/${rollout.id}`, undefined, cookie)).json.waves;
    return {
      processes,
      ...f,
      spread,
      state,
      seconds,
      receipts: Number(dup.receipts),
      distinct: Number(dup.devices),
      waves: waves.map((w) => `${w.name} ${w.done}/${w.size}`).join(', '),
      wavesDone: waves.every((w) => w.done === w.size && w.failed === 0),
      killedAt,
    };
  } finally {
    await sim?.stop();
    await lb?.stop();
    for (const s of servers) {
      s.child.kill('SIGTERM');
      await stopped(s.child);
    }
  }
}

// --- agent at rest --------------------------------------------------------------------------

/** RSS of `node [flags] agent/dist/main.js` 5 s after it is up (enrolled earlier or now). */
async function runAgent(env, flags, waitFor) {
  let ready = false;
  const child = spawn(process.execPath, [...flags, join(AGENT_DIR, 'main.js')], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  createInterface({ input: child.stderr }).on('line', (l) => {
    if (l.includes(waitFor)) ready = true;
  });
  try {
    for (let i = 0; i < 300 && !ready; i++) await sleep(100);
    if (!ready) throw new Error(`agent never logged ${waitFor}`);
    await sleep(5000);
    return await rssMiB(child.pid);
  } finally {
    child.kill('SIGTERM');
    await stopped(child);
  }
}

async function agentAtRest(s, cookie, dataDir, dir) {
  const token = (await api(s, 'POST', '/enroll-tokens', { name: 'bench-agent', max_uses: 1 }, cookie)).json.token;
  const env = {
    SVC_AGENT_SERVER: s.device,
    SVC_AGENT_DATA_DIR: join(dir, 'agent'),
    SVC_AGENT_SERVER_CA: join(dataDir, 'ca/server/ca.pem'),
    SVC_AGENT_ENROLL_TOKEN: token,
    SVC_AGENT_DEVICE_NAME: 'bench-agent',
  };
  const idle = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    const enrolling = await runAgent(env, [], '"running"');
    const rest = await runAgent(env, [], '"running"');
    const lean = await runAgent(env, ['--max-semi-space-size=1', '--lite-mode'], '"running"');
    return { enrolling, rest, lean, node_idle_rss_mib: await rssMiB(idle.pid) };
  } finally {
    idle.kill('SIGTERM');
  }
}

// --- run ------------------------------------------------------------------------------------

const t0 = Date.now();
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-channel-'));
const dataDir = join(dir, 'server');
const schema = `bench_channel_${randomBytes(4).toString('hex')}`;
if (PG_URL) schemas.push(schema);
const s = await startServer(dataDir, schema);
let sim;
try {
  const cookie = await login(s);
  const db = PG_URL ? `PostgreSQL, schema ${schema}` : 'embedded PGlite (set SVC_TEST_DATABASE_URL for PostgreSQL)';
  console.log(
    ONLY_RSS
      ? `device channel bench, server RSS only (BENCH_CHANNEL_ONLY=rss): ${N} connected devices (${db})`
      : `device channel bench: ${N} connected devices, ${ENROLL_N} timed enrollments, scale-out ${SCALE_N} devices on ${SCALE_PROCESSES.join('/')} processes (${db})`,
  );

  if (PHASES.has('enroll')) {
    const e = await enrollmentFigure(s, cookie, dataDir);
    console.log(
      `enrollment (CSR -> certificate, ${PG_URL ? 'PostgreSQL' : 'PGlite'}): ${e.real.perS.toFixed(0)}/s (${e.real.ok}/${ENROLL_N} issued${e.real.refused ? `, ${e.real.refused} refused: ${e.real.lastError}` : ''}); baseline ${e.base.perS.toFixed(0)}/s refused at the token check; ratio ${(e.real.perS / e.base.perS).toFixed(2)}x; target >= ${TARGETS.enrollPerS}/s: ${verdict(e.real.perS >= TARGETS.enrollPerS && e.real.ok === ENROLL_N)}`,
    );
    console.log(
      `  server CPU per enrollment ${e.real.cpuMsPerCall.toFixed(3)} ms; baseline ${e.base.cpuMsPerCall.toFixed(3)} ms per refused call; ratio ${(e.real.cpuMsPerCall / e.base.cpuMsPerCall).toFixed(2)}x`,
    );
    if (process.env.BENCH_SERVER_FLAGS?.includes('--cpu-prof')) {
      console.log(
        `  timed windows (CLOCK_MONOTONIC µs, as in the server's .cpuprofile): baseline ${e.base.window.join('-')}, enrollment ${e.real.window.join('-')}`,
      );
    }
    // a refused enrollment is a failed call, not a slow one: the rate above did not measure issuance
    measured(e.real.refused === 0, `enrollment: ${e.real.refused} of ${ENROLL_N} refused (last error: ${e.real.lastError})`);
    measured(
      e.base.ok === 0 && /token/.test(e.base.lastError ?? ''),
      `enrollment baseline: ${e.base.ok} issued, last refusal ${e.base.lastError} (expected the token check)`,
    );
  }

  if (PHASES.has('fleet') && ONLY_RSS) {
    const token = (await api(s, 'POST', '/enroll-tokens', { name: `bench-${N}`, max_uses: N }, cookie)).json.token;
    const f = await fleetFigures(s.device, join(dataDir, 'ca/server/ca.pem'), token, N, `b${N}`, [s.child.pid], [s.device.split(':')[1]]);
    sim = f.sim;
    console.log(
      `server RSS per connected device: ${f.rssPerDeviceKiB.toFixed(1)} KiB (RSS ${f.rss0.toFixed(1)} -> ${f.rssConnected.toFixed(1)} MiB with ${f.connected} of ${N} devices connected); target <= ${TARGETS.rssKiB} KiB: ${verdict(f.rssPerDeviceKiB <= TARGETS.rssKiB)}`,
    );
  } else if (PHASES.has('fleet')) {
    const token = (await api(s, 'POST', '/enroll-tokens', { name: `bench-${N}`, max_uses: N }, cookie)).json.token;
    const f = await fleetFigures(s.device, join(dataDir, 'ca/server/ca.pem'), token, N, `b${N}`, [s.child.pid], [s.device.split(':')[1]]);
    sim = f.sim;
    const ratio = f.checkIn / f.ping;
    console.log(
      `check-ins at ${N} devices (${f.connected} connected; each every ${intervalFor(N)} s): ${f.checkIn.toFixed(0)}/s; baseline Ping ${f.ping.toFixed(0)}/s; ratio ${ratio.toFixed(2)}x; target >= ${TARGETS.checkInRatio}x: ${verdict(ratio >= TARGETS.checkInRatio)} (simulator enrolled ${f.enrolled.devices} in ${f.enrolled.seconds.toFixed(0)} s; turns skipped with the in-flight window full ${f.skipped}; errors ${f.errors}${f.lastError ? `: ${f.lastError}` : ''})`,
    );
    console.log(
      `server RSS per connected device: ${f.rssPerDeviceKiB.toFixed(1)} KiB (RSS with ${f.connected} of ${N} devices connected minus before); baseline: none, absolute; target <= ${TARGETS.rssKiB} KiB: ${verdict(f.rssPerDeviceKiB <= TARGETS.rssKiB)}; simulator ${f.simRss} MiB`,
    );
    await sim.stop();
    sim = undefined;
  }

  if (PHASES.has('scale')) {
    if (!PG_URL) console.log('SKIPPED scale-out: needs PostgreSQL (SVC_TEST_DATABASE_URL)');
    else if (!existsSync(HAPROXY)) console.log(`SKIPPED scale-out: ${HAPROXY} not installed (apt-get install haproxy)`);
    else {
      const rounds = [];
      for (const p of SCALE_PROCESSES) {
        const r = await scaleOut(dir, p, SCALE_N);
        rounds.push(r);
        const base = rounds[0];
        const complete = r.state === 'committed' && r.receipts === SCALE_N && r.wavesDone;
        console.log(
          `scale-out ${p} process${p > 1 ? 'es' : ''} behind HAProxy, ${SCALE_N} devices (connections per process ${r.spread.join('/')}): check-ins ${r.checkIn.toFixed(0)}/s (Ping ${r.ping.toFixed(0)}/s; errors ${r.errors}); baseline 1 process ${base.checkIn.toFixed(0)}/s; ratio ${(r.checkIn / base.checkIn).toFixed(2)}x`,
        );
        console.log(
          `  rollout (3 waves) ${r.state} after ${r.seconds.toFixed(0)} s: ${r.receipts}/${SCALE_N} receipts, ${(r.receipts / r.seconds).toFixed(1)}/s; baseline 1 process ${(base.receipts / base.seconds).toFixed(1)}/s; ratio ${(r.receipts / r.seconds / (base.receipts / base.seconds)).toFixed(2)}x; waves ${r.waves}${r.killedAt !== undefined ? `; process 2 SIGKILLed at ${r.killedAt} receipts` : ''}; no device counted twice (${r.receipts} receipts, ${r.distinct} devices): ${verdict(r.receipts === r.distinct)}; every receipt in and waves done within the window: ${verdict(complete)}`,
        );
      }
    }
  }

  if (PHASES.has('agent')) {
    const a = await agentAtRest(s, cookie, dataDir, dir);
    console.log(
      `agent RSS at rest: ${a.lean.toFixed(1)} MiB as shipped (svc-agent: --max-semi-space-size=1 --lite-mode), ${a.rest.toFixed(1)} MiB under plain node, ${a.enrolling.toFixed(1)} MiB in the process that enrolled; baseline idle node ${a.node_idle_rss_mib.toFixed(1)} MiB; ratio ${(a.lean / a.node_idle_rss_mib).toFixed(2)}x; target < 60 MiB: ${verdict(a.lean < 60)}`,
    );
  }
  console.log(`channel bench took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
} finally {
  await sim?.stop();
  s.child.kill('SIGTERM');
  await stopped(s.child);
  await rm(dir, { recursive: true, force: true });
  if (PG_URL) {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    for (const name of schemas) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    await client.end();
  }
}
