// What a reconnect costs the device channel (docs/device-channel.md, "Reconnects and TLS session
// resumption"): a server process (dist/main.js, embedded PGlite unless SVC_BENCH_DATABASE_URL or
// SVC_TEST_DATABASE_URL is set) and one enrolled device, then two timed phases of
// BENCH_HANDSHAKE_SECONDS (10) each, BENCH_HANDSHAKE_CONCURRENCY (8) calls at a time:
//   baseline: authenticated Pings on one kept mTLS connection;
//   measured: a new connection per Ping (a full TLS 1.3 handshake, server and device keys P-256,
//             client certificate verified against the device CA trust store; no session tickets,
//             as the device port is configured), then the Ping, then the connection closed.
// The server's CPU per call (user + system from /proc/<pid>/stat over the phase) gives, by
// difference, the server CPU of one full handshake and so the handshakes one core affords.
// Then what session resumption would save, on a bare node:tls server (no HTTP/2, no grpc-js) with
// the same kinds of keys and a client certificate required: server CPU per connection with a full
// handshake each time (no tickets) against one resumed from a TLS 1.3 session ticket.
// Target: the handshakes of 100k devices checking in every 10 minutes (about 170/s) take at most
// half of one core (the other half is for the calls themselves and the rest of the process).
// Prints the rates, the ratio to the baseline and met/NOT MET.
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes, webcrypto } from 'node:crypto';
import pg from 'pg';
import * as x509 from '@peculiar/x509';
import { credentials, Metadata } from '@grpc/grpc-js';
import { DeviceServiceClient, EnrollmentServiceClient } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import tls from 'node:tls';
import { constants } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { bareTlsMaterial } from './bare-tls.mjs';
import { api } from './fleet-api.mjs';
import { benchMain, cpuSeconds, measured } from './measure.mjs';
import { benchKekEnv } from './kek.mjs';

const SERVER_MAIN = resolve(import.meta.dirname, '../dist/main.js');
const PHASE_S = Number(process.env.BENCH_HANDSHAKE_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_HANDSHAKE_CONCURRENCY ?? 8);
const PG_URL = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const ADMIN = { email: 'bench@example.com', password: 'bench-password-123456' };
/** 100k devices, one check-in each per 10 minutes. */
const FLEET_CHECKINS_PER_S = 100_000 / 600;
/** The share of one core those handshakes may take. */
const TARGET_CORE_SHARE = 0.5;
const TLS_NAME = 'device-channel.svc.internal';
const OPTS = { 'grpc.ssl_target_name_override': TLS_NAME, 'grpc.default_authority': TLS_NAME, 'grpc.use_local_subchannel_pool': 1, 'grpc.enable_retries': 0 };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const unary = (fn) => new Promise((res, rej) => fn(new Metadata(), { deadline: Date.now() + 30_000 }, (err, out) => (err ? rej(err) : res(out))));

async function startServer(dataDir, schema) {
  let http;
  let device;
  const child = spawn(process.execPath, [SERVER_MAIN], {
    env: {
      ...process.env,
      SVC_DATA_DIR: dataDir,
      SVC_HTTP_ADDR: '127.0.0.1:0',
      SVC_DEVICE_ADDR: '127.0.0.1:0',
      SVC_ADMIN_EMAIL: ADMIN.email,
      SVC_ADMIN_PASSWORD: ADMIN.password,
      SVC_LOG_LEVEL: 'info',
      ...(PG_URL ? { SVC_DATABASE_URL: PG_URL, SVC_DATABASE_SCHEMA: schema, ...benchKekEnv() } : { SVC_DATABASE_URL: '' }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (l) => {
      let j;
      try {
        j = JSON.parse(l);
      } catch {
        return;
      }
      const m = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(j.msg ?? '');
      if (m) http = m[1];
      if (j.msg === 'device channel listening') device = `127.0.0.1:${j.port}`;
    });
  }
  for (let i = 0; i < 900 && !(http && device) && child.exitCode === null; i++) await sleep(100);
  measured(http && device, 'the server did not start');
  return { child, http, device };
}

/** One device enrolled through the real Enroll call; its mTLS credentials. */
async function enrollOne(s, dataDir) {
  const cookie = (await api(s, 'POST', '/auth/login', ADMIN)).res.headers.get('set-cookie').split(';')[0];
  const token = (await api(s, 'POST', '/enroll-tokens', { name: 'bench-handshake', max_uses: 1 }, cookie)).json.token;
  const serverCaPem = await readFile(join(dataDir, 'ca/server/ca.pem'), 'utf8');
  const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const name = 'bench-handshake-1';
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: `CN=${name}`, keys, signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' } });
  const enrollment = new EnrollmentServiceClient(s.device, credentials.createSsl(Buffer.from(serverCaPem)), OPTS);
  const res = await unary((md, o, cb) =>
    enrollment.enroll(
      { token, deviceName: name, csrDer: Buffer.from(csr.rawData), inventory: { agentVersion: 'bench', profile: 'linux-arm64', product: 'bench', slots: [] } },
      md,
      o,
      cb,
    ),
  );
  enrollment.close();
  const keyPem = encodePem(new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)), 'PRIVATE KEY');
  return credentials.createSsl(Buffer.from(serverCaPem), Buffer.from(keyPem), Buffer.from(encodePem(res.certificateDer, 'CERTIFICATE')));
}

/** `CONCURRENCY` loops of `call` for PHASE_S seconds; calls/s and the server's CPU ms per call. */
async function phase(pid, call) {
  let calls = 0;
  let failed = 0;
  let lastError;
  const cpu0 = await cpuSeconds(pid);
  const t0 = performance.now();
  const end = t0 + PHASE_S * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        try {
          await call();
          calls += 1;
        } catch (e) {
          failed += 1;
          lastError = e.details ?? e.message;
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpuMs = ((await cpuSeconds(pid)) - cpu0) * 1000;
  measured(failed === 0, `${failed} calls failed (last: ${lastError})`);
  measured(calls > 0, 'no call completed');
  return { perS: calls / seconds, cpuMsPerCall: cpuMs / calls, calls };
}

/** The bare TLS server (child role `tls-serve DIR TICKETS`): one byte per connection, then end. */
if (process.argv[2] === 'tls-serve') {
  const [dir, tickets] = process.argv.slice(3);
  const pem = (f) => readFile(join(dir, f), 'utf8');
  const server = tls.createServer({
    key: await pem('server.key'),
    cert: await pem('server.pem'),
    ca: await pem('ca.pem'),
    requestCert: true,
    rejectUnauthorized: true,
    ...(tickets === 'on' ? {} : { secureOptions: constants.SSL_OP_NO_TICKET }),
  });
  server.on('secureConnection', (socket) => socket.end('x'));
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
} else {
  await benchMain('handshake', main);
}

/** Server TLS material as the device port makes it (P-256), a client CA and a P-256 client certificate, in `dir`. */
async function bareTlsFiles(dir) {
  const m = await bareTlsMaterial();
  await writeFile(join(dir, 'server.pem'), m.server.certPem);
  await writeFile(join(dir, 'server.key'), m.server.keyPem);
  await writeFile(join(dir, 'ca.pem'), m.clientCa);
  return { ca: m.serverCa, cert: m.client.certPem, key: m.client.keyPem };
}

/** Server CPU per connection to a bare TLS server with tickets `on` or `off`; resumed connections counted. */
async function bareTls(dir, client, tickets) {
  const child = spawn(process.execPath, [import.meta.filename, 'tls-serve', dir, tickets], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise((res, rej) => {
      createInterface({ input: child.stdout }).once('line', (l) => res(JSON.parse(l).port));
      child.once('exit', () => rej(new Error('the bare TLS server exited')));
    });
    let session;
    let resumed = 0;
    const connectOnce = () =>
      new Promise((res, rej) => {
        const socket = tls.connect({ host: '127.0.0.1', port, servername: TLS_NAME, ...client, ...(session ? { session } : {}) });
        socket.on('session', (s) => (session = s));
        socket.once('data', () => {
          if (socket.isSessionReused()) resumed += 1;
          socket.end();
        });
        socket.once('close', res);
        socket.once('error', rej);
      });
    for (let i = 0; i < 50; i++) await connectOnce();
    resumed = 0;
    const r = await phase(child.pid, connectOnce);
    return { ...r, resumed };
  } finally {
    child.kill();
  }
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-handshake-'));
  const schema = `bench_handshake_${randomBytes(4).toString('hex')}`;
  const s = await startServer(join(dir, 'server'), schema);
  try {
    const creds = await enrollOne(s, join(dir, 'server'));
    // baseline: one kept connection (opened and warmed before the clock starts)
    const kept = new DeviceServiceClient(s.device, creds, OPTS);
    for (let i = 0; i < 200; i++) await unary((md, o, cb) => kept.ping({}, md, o, cb));
    const base = await phase(s.child.pid, () => unary((md, o, cb) => kept.ping({}, md, o, cb)));
    kept.close();
    // measured: a connection per call, closed after it
    const fresh = await phase(s.child.pid, async () => {
      const c = new DeviceServiceClient(s.device, creds, OPTS);
      try {
        await unary((md, o, cb) => c.ping({}, md, o, cb));
      } finally {
        c.close();
      }
    });
    const handshakeMs = fresh.cpuMsPerCall - base.cpuMsPerCall;
    measured(handshakeMs > 0, `a new connection cost no more server CPU than a kept one (${fresh.cpuMsPerCall} vs ${base.cpuMsPerCall} ms)`);
    const perCore = 1000 / handshakeMs;
    const share = (FLEET_CHECKINS_PER_S * handshakeMs) / 1000;
    const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
    console.log(`handshake bench: ${PHASE_S} s per phase, ${CONCURRENCY} calls at a time, ${PG_URL ? 'PostgreSQL' : 'PGlite'}, load average ${load}`);
    console.log(
      `  baseline  Ping on a kept connection:         ${base.perS.toFixed(0)}/s, server CPU ${base.cpuMsPerCall.toFixed(3)} ms per call (${base.calls} calls)`,
    );
    console.log(
      `  measured  new mTLS connection + Ping + close: ${fresh.perS.toFixed(0)}/s, server CPU ${fresh.cpuMsPerCall.toFixed(3)} ms per call (${fresh.calls} calls); ratio ${(fresh.perS / base.perS).toFixed(2)}x`,
    );
    console.log(`  full mTLS P-256 handshake (difference): ${handshakeMs.toFixed(3)} ms of server CPU = ${perCore.toFixed(0)} handshakes/s per core`);
    console.log(
      `  100k devices every 10 min (${FLEET_CHECKINS_PER_S.toFixed(0)} check-ins/s): handshakes take ${(share * 100).toFixed(1)}% of one core; target <= ${TARGET_CORE_SHARE * 100}%: ${share <= TARGET_CORE_SHARE ? 'met' : 'NOT MET'}`,
    );
    // what tickets would save: the same TLS without HTTP/2 and grpc-js, full against resumed
    const bareDir = join(dir, 'bare');
    await mkdir(bareDir);
    const client = await bareTlsFiles(bareDir);
    const full = await bareTls(bareDir, client, 'off');
    const resumed = await bareTls(bareDir, client, 'on');
    measured(resumed.resumed > resumed.calls / 2, `tickets on, but only ${resumed.resumed} of ${resumed.calls} connections resumed`);
    console.log(`  bare node:tls mTLS, full handshake:       ${full.perS.toFixed(0)}/s, server CPU ${full.cpuMsPerCall.toFixed(3)} ms per connection`);
    console.log(
      `  bare node:tls mTLS, resumed from a ticket: ${resumed.perS.toFixed(0)}/s, server CPU ${resumed.cpuMsPerCall.toFixed(3)} ms per connection (${resumed.resumed} of ${resumed.calls} resumed); saves ${(full.cpuMsPerCall - resumed.cpuMsPerCall).toFixed(3)} ms of the ${fresh.cpuMsPerCall.toFixed(3)} ms a device-channel reconnect costs`,
    );
  } finally {
    s.child.kill('SIGTERM');
    await new Promise((r) => (s.child.exitCode !== null ? r() : s.child.once('exit', r)));
    await rm(dir, { recursive: true, force: true });
    if (PG_URL) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  }
}
