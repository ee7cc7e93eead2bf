// Device-channel benchmark (docs/device-channel.md). One server process (dist/main.js) and the
// fleet simulator (apps/agent/dist/sim/main.js) in another process, real mTLS per device:
//   - baseline: authenticated empty unary calls (DeviceService.Ping) over the same connections
//   - check-ins/s one server process sustains (each device asks every BENCH_CHANNEL_INTERVAL s)
//   - receipts/s: a signed rollout to every simulated device, each uploads a real signed receipt
//   - server RSS per connected device, agent RSS at rest (a real agent process idle after enrollment)
// Printed as ratios against the baseline measured in the same run (docs/development.md).
// BENCH_CHANNEL_SIZES (default "1000,10000"), BENCH_CHANNEL_SECONDS per phase (default 15).
// Database: embedded PGlite, or PostgreSQL (a fresh schema, dropped after) when
// SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL is set. The whole run stays under ~8 minutes.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { generateKeyPair, signRelease } from '@svc/release-core';

const here = import.meta.dirname;
const SERVER_MAIN = resolve(here, '../dist/main.js');
const AGENT_DIR = resolve(here, '../../agent/dist');
const SIZES = (process.env.BENCH_CHANNEL_SIZES ?? '1000,10000').split(',').map(Number);
const PHASE_S = Number(process.env.BENCH_CHANNEL_SECONDS ?? 15);
// Every device asks once per interval. Up to 2000 devices: 1 s; larger fleets N/500 s (20 s at
// 10k): 500 calls/s of demand, more than one process serves, so the rates are the server's
// capacity (closed loop: a device never overlaps its own calls) while the interval stays short
// enough for a bounded run.
const intervalFor = (n) => Number(process.env.BENCH_CHANNEL_INTERVAL ?? (n <= 2000 ? 1 : Math.ceil(n / 500)));
const PG_URL = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const PG_SCHEMA = `bench_channel_${randomBytes(4).toString('hex')}`;
const ADMIN = { email: 'bench@example.com', password: 'bench-password-123456' };

const rssMiB = async (pid) => {
  const s = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(s)[1]) / 1024;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Spawns `node file args`, handing every stdout JSON line to `onLine`. */
function start(file, args, env, onLine) {
  const child = spawn(process.execPath, [file, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

async function startServer(dataDir) {
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
      ...(PG_URL ? { SVC_DATABASE_URL: PG_URL, SVC_DATABASE_SCHEMA: PG_SCHEMA } : { SVC_DATABASE_URL: '' }),
    },
    (j) => {
      const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(j.msg ?? '');
      if (m) http = m[1];
      if (j.msg === 'device channel listening') device = `127.0.0.1:${j.port}`;
    },
  );
  for (let i = 0; i < 600 && !(http && device); i++) await sleep(100);
  if (!(http && device)) throw new Error('server did not start');
  return { child, http, device };
}

async function api(s, method, path, body, cookie) {
  const res = await fetch(`${s.http}/api/v1${path}`, {
    method,
    headers: { ...(cookie ? { cookie, 'x-svc-csrf': '1' } : {}), ...(body && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}) },
    body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return { res, json: res.status === 204 ? null : await res.json() };
}

async function login(s) {
  const { res } = await api(s, 'POST', '/auth/login', ADMIN);
  return res.headers.get('set-cookie').split(';')[0];
}

/** A signed single-component release for `names`, published and rolled out through the REST API. */
async function rollOut(s, cookie, names, tag) {
  const tenant = (await api(s, 'GET', '/auth/me', undefined, cookie)).json.tenant_id;
  const form = new FormData();
  form.set('name', `bench-${tag}`);
  form.set('version', '1.0.0');
  form.set('kind', 'config');
  form.set('file', new Blob([`bench ${tag}\n`]), 'bench.conf');
  const art = (await api(s, 'POST', '/artifacts', form, cookie)).json;
  const group = (await api(s, 'POST', '/groups', { name: `bench-${tag}`, members: names }, cookie)).json;
  const key = generateKeyPair('ed25519');
  await api(s, 'POST', '/authorizer-keys', { name: `bench-${tag}`, public_key_pem: key.publicKey.pem }, cookie);
  const payload = {
    tenant,
    product: 'bench',
    release: { version: `1.0.${tag}` },
    components: [
      {
        name: 'conf',
        kind: 'config',
        artifact: { id: art.id, name: art.name, version: art.version },
        target: art.target,
        digest: art.digest,
        length: art.length,
        media_type: art.media_type,
        placement: { path: '/etc/bench.conf', mode: '0644' },
      },
    ],
    targets: { [art.target]: { length: art.length, hashes: { sha256: art.digest.slice(7) } } },
    compatibility: { profiles: ['linux-arm64'] },
    activation: { ordered_groups: [['conf']] },
    health: { probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }], timeout_s: 60 },
    rollout: { target_group: group.id, target_policy_digest: group.snapshot_digest },
    approvals: [],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2020-01-01T00:00:00Z', not_after: '2099-01-01T00:00:00Z', max_offline_age_s: 2592000 },
  };
  const rel = (await api(s, 'POST', '/releases', { envelope: signRelease(payload, key), expected_product: 'bench' }, cookie)).json;
  await api(s, 'POST', '/rollouts', { release_id: rel.id }, cookie);
}

function avg(xs) {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

async function fleet(s, cookie, dataDir, n) {
  // every phase lasts at least one interval (+10 s), so every device connected and called
  const phase = Math.max(PHASE_S, intervalFor(n) + 10);
  // rates count only once every device has made its first call (staggered over one interval)
  const warm = Math.max(3, intervalFor(n) + 1);
  const token = (await api(s, 'POST', '/enroll-tokens', { name: `bench-${n}`, max_uses: n }, cookie)).json.token;
  const lines = [];
  const rss0 = await rssMiB(s.child.pid);
  const sim = start(
    join(AGENT_DIR, 'sim/main.js'),
    [
      '--server',
      s.device,
      '--token',
      token,
      '--devices',
      String(n),
      '--interval',
      String(intervalFor(n)),
      '--server-ca',
      join(dataDir, 'ca/server/ca.pem'),
      '--prefix',
      `b${n}`,
      '--concurrency',
      '32',
      '--stats-every',
      '1',
      '--ping-first',
      String(phase + 2),
    ],
    {},
    (j) => lines.push({ ...j, t: Date.now() }),
  );
  while (!lines.some((l) => l.event === 'enrolled')) await sleep(200);
  const enrolled = lines.find((l) => l.event === 'enrolled');
  await sleep((phase + 3) * 1000); // ping phase (skip the first seconds: connections warming up)
  const rssConnected = await rssMiB(s.child.pid);
  await sleep(phase * 1000); // check-in phase
  const names = Array.from({ length: n }, (_, i) => `b${n}-${String(i).padStart(6, '0')}`);
  const tRoll = Date.now();
  await rollOut(s, cookie, names, String(n));
  // receipts/s over at most RECEIPT_WINDOW_S: every device's receipt, or as many as came in
  const RECEIPT_WINDOW_S = Math.max(Number(process.env.BENCH_CHANNEL_RECEIPT_WINDOW ?? 60), 2 * intervalFor(n) + 10);
  let done;
  let got = 0;
  for (let i = 0; i < RECEIPT_WINDOW_S * 4; i++) {
    const last = lines.filter((l) => l.event === 'stats').at(-1);
    got = last?.receipts ?? 0;
    done = last?.t;
    if (got >= n) break;
    await sleep(250);
  }
  sim.kill('SIGINT');
  await new Promise((r) => sim.once('exit', r));
  const stats = lines.filter((l) => l.event === 'stats');
  const pingRates = stats
    .filter((l) => l.mode === 'ping')
    .slice(warm)
    .map((l) => l.pings_per_s);
  const checkRates = stats
    .filter((l) => l.mode === 'check-in' && l.t < tRoll)
    .slice(2)
    .map((l) => l.check_ins_per_s);
  const last = stats.at(-1) ?? {};
  return {
    devices: n,
    enroll_s: enrolled.seconds,
    enrolled: enrolled.devices,
    ping_per_s: avg(pingRates),
    check_ins_per_s: avg(checkRates),
    receipts: last.receipts ?? 0,
    receipts_per_s: done && done > tRoll ? got / ((done - tRoll) / 1000) : 0,
    errors: last.errors ?? 0,
    last_error: last.last_error,
    server_rss_per_device_kib: ((rssConnected - rss0) * 1024) / n,
    sim_rss_mib: last.rss_mb,
    sim_rss_connected_mib: stats.filter((l) => l.mode === 'ping').at(-1)?.rss_mb,
  };
}

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
    await new Promise((r) => child.once('exit', r));
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
    // the process that enrolled (it loaded the CSR/X.509 code once)
    const enrolling = await runAgent(env, [], '"running"');
    // steady state: an enrolled agent (re)started, idle between check-ins
    const rest = await runAgent(env, [], '"running"');
    // as shipped: the svc-agent shebang's V8 flags
    const lean = await runAgent(env, ['--max-semi-space-size=1', '--lite-mode'], '"running"');
    return { enrolling, rest, lean, node_idle_rss_mib: await rssMiB(idle.pid) };
  } finally {
    idle.kill('SIGTERM');
  }
}

const t0 = Date.now();
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-channel-'));
const dataDir = join(dir, 'server');
const s = await startServer(dataDir);
try {
  const cookie = await login(s);
  console.log(
    `device channel bench: sizes ${SIZES.join(', ')}, ${PHASE_S} s per phase, one server process (${PG_URL ? `PostgreSQL, schema ${PG_SCHEMA}` : 'embedded PGlite'})`,
  );
  for (const n of SIZES) {
    const r = await fleet(s, cookie, dataDir, n);
    console.log(
      `${String(n).padStart(6)} devices (each every ${intervalFor(n)} s): enrolled ${r.enrolled} in ${r.enroll_s.toFixed(1)} s; baseline ping ${r.ping_per_s.toFixed(0)}/s; check-ins ${r.check_ins_per_s.toFixed(0)}/s; receipts ${r.receipts}/${n} at ${r.receipts_per_s.toFixed(0)}/s; errors ${r.errors}${r.last_error ? ` (${r.last_error})` : ''}`,
    );
    console.log(
      `${' '.repeat(6)}  ratio check-in/ping: ${(r.check_ins_per_s / r.ping_per_s).toFixed(2)}  receipt/ping: ${(r.receipts_per_s / r.ping_per_s).toFixed(3)}  server RSS per connected device: ${r.server_rss_per_device_kib.toFixed(1)} KiB  sim RSS ${r.sim_rss_connected_mib} MiB connected, ${r.sim_rss_mib} MiB at the end`,
    );
  }
  const a = await agentAtRest(s, cookie, dataDir, dir);
  console.log(
    `agent RSS at rest (target < 60 MiB): ${a.lean.toFixed(1)} MiB as shipped (svc-agent: --max-semi-space-size=1 --lite-mode), ${a.rest.toFixed(1)} MiB under plain node, ${a.enrolling.toFixed(1)} MiB in the process that enrolled`,
  );
  console.log(`  idle node baseline ${a.node_idle_rss_mib.toFixed(1)} MiB; ratio agent (as shipped)/idle node ${(a.lean / a.node_idle_rss_mib).toFixed(2)}x`);
  console.log(`channel bench took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
} finally {
  s.child.kill('SIGTERM');
  await new Promise((r) => s.child.once('exit', r));
  await rm(dir, { recursive: true, force: true });
  if (PG_URL) {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${PG_SCHEMA}" CASCADE`);
    await client.end();
  }
}
