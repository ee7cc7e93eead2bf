// Receipt-acceptance benchmark (docs/device-channel.md "The receipt pipeline"). One server
// process (dist/main.js), real gRPC mTLS clients in this process (one HTTP/2 connection and
// one enrolled certificate per device, through the agent's own client code), a signed rollout
// to every device, then every device uploads one real signed receipt:
//   - baseline: a loop in this process that only verifies prebuilt receipts with release-core's
//     verifyReceipt (the device's P-256 signature over PAE and the tenant CA's P-256 signature
//     on the embedded certificate), the code path the server runs for each receipt
//   - receipts accepted/s on PostgreSQL (verify + append + device state + counters + waves)
//   - receipts accepted/s on the embedded database (PGlite)
//   - rollout completion on PostgreSQL: from the moment the last device sends its receipt until
//     the rollout reads completed with every device committed and every wave done
// Receipts are signed before the timed phase (a device signs once and retries the same bytes);
// connections are open before it (a ping per device), so the figure is the server's acceptance.
// BENCH_RECEIPTS_DEVICES (PostgreSQL fleet, default 10000), BENCH_RECEIPTS_EMBEDDED_DEVICES
// (default 2000), BENCH_RECEIPTS_IN_FLIGHT (concurrent uploads, default 1000).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { api, rollOut } from './fleet-api.mjs';
import { BackendCpu, cpuSeconds, measured, withApplicationName } from './measure.mjs';
import {
  buildReceiptPayload,
  decodePem,
  encodePem,
  envelopeBytes,
  parseCertificateDer,
  parseEnvelope,
  parsePrivateKeyPem,
  signReceipt,
  verifyReceipt,
  LIMITS,
  RECEIPT_PAYLOAD_TYPE,
} from '@svc/release-core';
import { benchKekEnv } from './kek.mjs';

const here = import.meta.dirname;
const SERVER_MAIN = resolve(here, '../dist/main.js');
const AGENT_DIST = resolve(here, '../../agent/dist');
const { SimClients, SimEnroller } = await import(join(AGENT_DIST, 'sim/clients.js'));
const { keyPemFromScalar } = await import(join(AGENT_DIST, 'sim/sim-key.js'));
const { call, deviceCredentials } = await import(join(AGENT_DIST, 'channel/client.js'));

const PG_URL = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const PG_DEVICES = Number(process.env.BENCH_RECEIPTS_DEVICES ?? 10000);
const EMBEDDED_DEVICES = Number(process.env.BENCH_RECEIPTS_EMBEDDED_DEVICES ?? 2000);
const IN_FLIGHT = Number(process.env.BENCH_RECEIPTS_IN_FLIGHT ?? 1000);
const ADMIN = { email: 'bench@example.com', password: 'bench-password-123456' };
const TARGETS = { pgPerS: 1000, pgVsVerify: 0.6, embeddedPerS: 300, completionS: 60 };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const met = (ok) => (ok ? 'met' : 'NOT MET');
/** Busy and total CPU time of the whole machine (all cores), from /proc/stat, in seconds. */
const machineCpu = async () => {
  const f = (await readFile('/proc/stat', 'utf8')).split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / 100, total: total / 100 };
};

function startServer(dataDir, database) {
  let http, device;
  const child = spawn(process.execPath, [...(process.env.BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean), SERVER_MAIN], {
    env: {
      ...process.env,
      SVC_DATA_DIR: dataDir,
      SVC_HTTP_ADDR: '127.0.0.1:0',
      SVC_DEVICE_ADDR: '127.0.0.1:0',
      SVC_ADMIN_EMAIL: ADMIN.email,
      SVC_ADMIN_PASSWORD: ADMIN.password,
      SVC_LOG_LEVEL: 'info',
      ...(database
        ? { SVC_DATABASE_URL: withApplicationName(database.url, database.schema), SVC_DATABASE_SCHEMA: database.schema, ...benchKekEnv() }
        : { SVC_DATABASE_URL: '' }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => {
      try {
        const j = JSON.parse(l);
        const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(j.msg ?? '');
        if (m) http = m[1];
        if (j.msg === 'device channel listening') device = `127.0.0.1:${j.port}`;
        if (process.env.BENCH_VERBOSE && j.level >= 40) console.error(l);
      } catch {
        if (process.env.BENCH_VERBOSE) console.error(l);
      }
    });
  }
  return (async () => {
    for (let i = 0; i < 600 && !(http && device); i++) await sleep(100);
    if (!(http && device)) throw new Error('server did not start');
    return { child, http, device };
  })();
}

/** Runs `fn` over `items` with at most `n` in flight. */
async function pool(items, n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** `n` enrolled devices, each with its own mTLS connection (opened by a ping). */
async function enrollFleet(s, cookie, serverCaPem, n, prefix) {
  const token = (await api(s, 'POST', '/enroll-tokens', { name: `bench-${prefix}`, max_uses: n }, cookie)).json.token;
  const enroller = new SimEnroller(s.device, serverCaPem, 2);
  const devices = Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${String(i).padStart(6, '0')}` }));
  const t0 = performance.now();
  await pool(devices, 32, async (d) => {
    // the simulator's enrollment (node:crypto key and CSR, the answer as raw bytes)
    const { scalar, certDer, tenant } = await enroller.enrollCompact({ token, deviceName: d.name });
    const keyPem = keyPemFromScalar(scalar);
    d.key = parsePrivateKeyPem(keyPem);
    d.certDer = certDer;
    d.tenant = tenant;
    d.clients = new SimClients(s.device, deviceCredentials({ keyPem, certPem: encodePem(certDer, 'CERTIFICATE'), serverCaPem }));
  });
  const enrollS = (performance.now() - t0) / 1000;
  enroller.close();
  await pool(devices, 64, (d) => call((md, opts, cb) => d.clients.device.ping({}, md, opts, cb)));
  return { devices, enrollS };
}

/** Every device's receipt for the started rollout, signed now (not timed). */
function signReceipts(devices, r) {
  const m = r.started.rollouts[0];
  for (const d of devices) {
    const payload = buildReceiptPayload({
      tenant: d.tenant,
      device: { name: d.name, certificateDer: d.certDer },
      release: { product: r.rel.product, version: r.rel.version, payload_digest: r.rel.payload_digest, envelope_digest: r.rel.envelope_digest },
      transaction: { id: r.started.transaction_id, member_count: 1 },
      members: [
        {
          group: m.group,
          position: m.position,
          component: m.component,
          rollout: m.rollout_id,
          candidate_digest: r.digest,
          previous_digest: null,
          resulting_digest: r.digest,
          verdict: 'committed',
        },
      ],
      activation: 'activated',
      health: 'healthy',
      now: new Date(),
    });
    d.receipt = Buffer.from(envelopeBytes(signReceipt(payload, d.key)));
  }
}

/**
 * Receipts verified per second by release-core alone, over the prebuilt receipts, for ~2 s; and
 * the CPU milliseconds one verification takes (wall-clock rates move with the machine's load,
 * CPU time much less).
 */
function verifyOnly(devices, caDer) {
  const ca = parseCertificateDer(caDer);
  const now = new Date();
  let n = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  while (performance.now() - t0 < 2000) {
    const d = devices[n % devices.length];
    const env = parseEnvelope(d.receipt, { maxBytes: LIMITS.receiptEnvelopeBytes, payloadTypes: [RECEIPT_PAYLOAD_TYPE] });
    verifyReceipt(env, { ca, tenant: d.tenant, device: d.name, now, connectionCertificate: d.certDer });
    n++;
  }
  const cpu = process.cpuUsage(cpu0);
  return { perS: n / ((performance.now() - t0) / 1000), cpuMs: (cpu.user + cpu.system) / 1000 / n };
}

/** One fleet against one server: the verify baseline, receipts accepted/s, rollout completion. */
async function run(label, database, n) {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-receipts-'));
  const dataDir = join(dir, 'server');
  const s = await startServer(dataDir, database);
  let devices = [];
  try {
    const { res } = await api(s, 'POST', '/auth/login', ADMIN);
    const cookie = res.headers.get('set-cookie').split(';')[0];
    const serverCaPem = await readFile(join(dataDir, 'ca/server/ca.pem'), 'utf8');
    const fleet = await enrollFleet(s, cookie, serverCaPem, n, `r${n}`);
    devices = fleet.devices;
    const r = await rollOut(
      s,
      cookie,
      devices.map((d) => d.name),
      `${label}-${n}`,
    );
    signReceipts(devices, r);
    const caPem = (await api(s, 'GET', '/device-ca', undefined, cookie)).json.certificate_pem;
    const caDer = decodePem(caPem, 'CERTIFICATE');
    // the baseline is measured right before and right after the timed phase: the mean of both
    const before = verifyOnly(devices, caDer);
    const serverCpu0 = await cpuSeconds(s.child.pid);
    const benchCpu0 = process.cpuUsage();
    const machine0 = await machineCpu();
    const postgres = database ? new BackendCpu(database.url, database.schema) : undefined;
    await postgres?.start();

    let lastSent = 0;
    let refused = 0;
    let duplicates = 0;
    let firstError;
    const t0 = performance.now();
    await pool(devices, IN_FLIGHT, async (d) => {
      lastSent = performance.now();
      try {
        const out = await call((md, opts, cb) => d.clients.device.uploadReceipt({ envelope: d.receipt }, md, opts, cb), 120_000);
        if (out.duplicate) duplicates++;
      } catch (e) {
        refused++;
        firstError ??= e.details ?? String(e);
      }
    });
    const acceptS = (performance.now() - t0) / 1000;
    const serverCpuS = (await cpuSeconds(s.child.pid)) - serverCpu0;
    const benchCpu = process.cpuUsage(benchCpu0);
    const machine1 = await machineCpu();
    const postgresCpu = await postgres?.stop();
    const after = verifyOnly(devices, caDer);
    let completed;
    for (let i = 0; i < 1200; i++) {
      const detail = (await api(s, 'GET', `/rollouts/${r.started.rollouts[0].rollout_id}?limit=1`, undefined, cookie)).json;
      if (detail.status === 'completed' && detail.progress.committed === n && detail.waves.every((w) => w.state === 'done')) {
        completed = performance.now();
        break;
      }
      await sleep(50);
    }
    // the same connections, one authenticated empty call each: the channel's share of a receipt
    const pingCpu0 = await cpuSeconds(s.child.pid);
    const tPing = performance.now();
    await pool(devices, IN_FLIGHT, (d) => call((md, opts, cb) => d.clients.device.ping({}, md, opts, cb), 120_000));
    const pingPerS = n / ((performance.now() - tPing) / 1000);
    const pingCpuMs = (((await cpuSeconds(s.child.pid)) - pingCpu0) * 1000) / n;
    return {
      n,
      enrollS: fleet.enrollS,
      verifyPerS: (before.perS + after.perS) / 2,
      verifyCpuMs: (before.cpuMs + after.cpuMs) / 2,
      serverCpuMs: (serverCpuS * 1000) / (n - refused - duplicates),
      // the devices' side of each upload (TLS, HTTP/2, protobuf) runs in this process
      clientCpuMs: (benchCpu.user + benchCpu.system) / 1000 / n,
      // how much of the machine was busy during the phase, in cores (the server, the devices, the database, anything else)
      machineBusyCores: (machine1.busy - machine0.busy) / acceptS,
      postgresCpuMs: postgresCpu === undefined ? undefined : (postgresCpu.seconds * 1000) / n,
      postgresBackends: postgresCpu?.backends,
      pingPerS,
      pingCpuMs,
      acceptedPerS: (n - refused - duplicates) / acceptS,
      acceptS,
      refused,
      duplicates,
      firstError,
      completionS: completed === undefined ? Infinity : (completed - lastSent) / 1000,
    };
  } finally {
    for (const d of devices) d.clients?.close();
    s.child.kill('SIGTERM');
    await new Promise((r) => s.child.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

/** Prints the figures of `r`. */
function report(label, r) {
  console.log(
    `${label}: ${r.n} devices enrolled in ${r.enrollS.toFixed(1)} s; ${r.n - r.refused - r.duplicates} receipts accepted in ${r.acceptS.toFixed(2)} s` +
      `${r.refused ? `; ${r.refused} REFUSED (${r.firstError})` : ''}${r.duplicates ? `; ${r.duplicates} duplicates` : ''}`,
  );
  console.log(
    `  server CPU per accepted receipt ${r.serverCpuMs.toFixed(2)} ms (gRPC, TLS, authentication, verification, append), ` +
      `verify-only ${r.verifyCpuMs.toFixed(2)} ms: ratio ${(r.verifyCpuMs / r.serverCpuMs).toFixed(2)}; ` +
      `an authenticated Ping over the same connections ${r.pingCpuMs.toFixed(2)} ms (${r.pingPerS.toFixed(0)}/s)`,
  );
  console.log(
    `  during the phase: the devices' side (this process) ${r.clientCpuMs.toFixed(2)} ms CPU per upload; ` +
      (r.postgresCpuMs === undefined
        ? ''
        : `PostgreSQL ${r.postgresCpuMs.toFixed(2)} ms per receipt (the server's ${r.postgresBackends} backends, from /proc/<pid>/stat); `) +
      `the machine ${r.machineBusyCores.toFixed(2)} of ${availableParallelism()} cores busy (server, devices, database, anything else running)`,
  );
  // What bounds the ratio to verify-only, from this run's CPU figures: every accepted receipt
  // costs the server, the devices' side and the database this much CPU on the same cores, and
  // the verify-only loop had one core to itself for its ~verifyCpuMs per receipt.
  const cores = availableParallelism();
  const perReceiptMs = r.serverCpuMs + r.clientCpuMs + (r.postgresCpuMs ?? 0);
  const benchCores = (perReceiptMs * r.acceptedPerS) / 1000;
  console.log(
    `  what bounds it: ${perReceiptMs.toFixed(2)} ms of CPU per receipt (server + devices' side${r.postgresCpuMs === undefined ? '' : ' + PostgreSQL'}), ` +
      `so ${cores} cores accept at most ${((cores * 1000) / perReceiptMs).toFixed(0)}/s, ${((cores * r.verifyCpuMs) / perReceiptMs).toFixed(2)}x verify-only's CPU rate; ` +
      `this run's processes got ${benchCores.toFixed(2)} of the ${r.machineBusyCores.toFixed(2)} busy cores (the rest: other work on the machine)`,
  );
}

const t0 = Date.now();
console.log(
  `receipt bench: ${IN_FLIGHT} uploads in flight; PostgreSQL ${PG_URL ? `${PG_DEVICES} devices` : 'not configured'}, embedded ${EMBEDDED_DEVICES} devices`,
);
if (PG_URL) {
  const schema = `bench_receipts_${randomBytes(4).toString('hex')}`;
  try {
    const r = await run('pg', { url: PG_URL, schema }, PG_DEVICES);
    report('PostgreSQL', r);
    const ratio = r.acceptedPerS / r.verifyPerS;
    console.log(`  baseline verify-only (release-core verifyReceipt, one core): ${r.verifyPerS.toFixed(0)} receipts/s`);
    console.log(
      `  receipts accepted/s on PostgreSQL: ${r.acceptedPerS.toFixed(0)}/s (target >= ${TARGETS.pgPerS}: ${met(r.acceptedPerS >= TARGETS.pgPerS && r.refused === 0)}); ` +
        `ratio to verify-only ${ratio.toFixed(2)} (target >= ${TARGETS.pgVsVerify}: ${met(ratio >= TARGETS.pgVsVerify)})`,
    );
    console.log(
      `  rollout completion of ${r.n} devices (3 waves): ${r.completionS.toFixed(2)} s after the last device reported ` +
        `(target < ${TARGETS.completionS} s${r.n < 10000 ? `, measured at ${r.n}, the target is for 10000` : ''}: ${met(r.completionS < TARGETS.completionS && r.n >= 10000)})`,
    );
    measured(r.refused === 0, `PostgreSQL: ${r.refused} of ${r.n} receipts refused (${r.firstError})`);
  } finally {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}
if (EMBEDDED_DEVICES > 0) {
  const r = await run('embedded', undefined, EMBEDDED_DEVICES);
  report('embedded (PGlite)', r);
  console.log(`  baseline verify-only (release-core verifyReceipt, one core): ${r.verifyPerS.toFixed(0)} receipts/s`);
  console.log(
    `  receipts accepted/s on the embedded database: ${r.acceptedPerS.toFixed(0)}/s (target >= ${TARGETS.embeddedPerS}: ${met(r.acceptedPerS >= TARGETS.embeddedPerS && r.refused === 0)}); ` +
      `ratio to verify-only ${(r.acceptedPerS / r.verifyPerS).toFixed(2)}`,
  );
  measured(r.refused === 0, `embedded: ${r.refused} of ${r.n} receipts refused (${r.firstError})`);
}
console.log(`receipt bench took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
