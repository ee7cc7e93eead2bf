#!/usr/bin/env node
/**
 * GET /api/v1/devices?filter= over 100k devices on PostgreSQL (docs/device-filter.md): the
 * first page of a filter on two attributes, p99 of sequential requests against the real server
 * (`node <flags> dist/main.js`, as `pnpm start` runs it). Baseline in the same run: the
 * unfiltered first page of the same fleet. Target: filtered p99 < 100 ms (met / not met).
 *
 *   SVC_TEST_DATABASE_URL=postgres://... node bench/device-filter.mjs
 *
 * The fleet: dev-0000001.. (bench/seed-devices.mjs), each with a reported `hw_model` of 8 and a
 * custom `site` of 10, so the filter selects about 1 device in 80, and a tag on every other one.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { seedDevices } from './seed-devices.mjs';
import { benchKekEnv } from './kek.mjs';
import { serverLaunch } from './measure.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '../dist');
const { openStore, migrateToLatest, ensureDefaultTenant, newSecret, insertApiKey } = await import(join(dist, 'index.js'));
const pgUrl = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const N = 100_000;
const REQUESTS = Number(process.env.SVC_BENCH_REQUESTS ?? 400);
const TARGET_P99_MS = 100;
const FILTER = 'attributes.hw_model = "gw-3" and custom.site = "lyon"';
// on PostgreSQL, as a deployment's hosts run it
const launch = serverLaunch(await readFile(resolve(here, '../package.json'), 'utf8'), 'postgres');

if (!pgUrl) {
  console.error('device-filter bench: set SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL (PostgreSQL)');
  process.exit(1);
}

function startServer(env) {
  return new Promise((resolvePort, reject) => {
    const child = spawn(process.execPath, [...launch.flags, join(dist, 'main.js')], {
      env: { ...process.env, ...launch.env, SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'warn', ...env },
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

/** Sequential requests (after a warm-up); returns p50, p99 in ms and the last body. */
async function measure(url, headers) {
  const times = [];
  let body;
  for (let i = 0; i < REQUESTS + 50; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { headers });
    body = await res.json();
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
    if (i >= 50) times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { p50: at(0.5), p99: at(0.99), body };
}

const schema = `bench_filter_${process.pid}`;
const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-filter-'));
const store = await openStore({ databaseUrl: pgUrl, schema });
let child;
try {
  await migrateToLatest(store);
  const tenant = await ensureDefaultTenant(store.db);
  const seedMs = await seedDevices(store.db, tenant, N);
  const t0 = performance.now();
  await sql`UPDATE devices SET
      inventory = jsonb_build_object(
        'attributes', jsonb_build_object('hw_model', 'gw-' || (1 + (hashtext(name) & 7)), 'arch', 'arm64'),
        'custom', jsonb_build_object('site', (ARRAY['lyon','paris','oslo','rome','bonn','kiel','metz','nice','graz','linz'])[1 + ((hashtext(name) >> 4) & 1023) % 10]),
        'members', '[]'::jsonb),
      tags = CASE WHEN hashtext(name) % 2 = 0 THEN ARRAY['eu'] ELSE ARRAY['us'] END
    WHERE tenant_id = ${tenant}`.execute(store.db);
  await sql`VACUUM ANALYZE devices`.execute(store.db);
  const invMs = performance.now() - t0;
  const secret = newSecret('svck');
  await insertApiKey(store.db, { tenantId: tenant, name: 'bench', role: 'viewer', prefix: secret.prefix, keyHash: secret.hash, createdBy: null });
  const started = await startServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: pgUrl, SVC_DATABASE_SCHEMA: schema, ...benchKekEnv() });
  child = started.child;
  const base = `http://127.0.0.1:${started.port}/api/v1/devices`;
  const headers = { authorization: `Bearer ${secret.plaintext}` };
  const baseline = await measure(base, headers);
  const filtered = await measure(`${base}?filter=${encodeURIComponent(FILTER)}`, headers);
  const met = filtered.p99 < TARGET_P99_MS;
  console.log(
    `device-filter bench: ${N.toLocaleString()} devices on PostgreSQL (seed ${(seedMs / 1000).toFixed(1)} s, inventory ${(invMs / 1000).toFixed(1)} s)`,
  );
  console.log(`  filter: ${FILTER}  (${filtered.body.total} match, first page ${filtered.body.devices.length})`);
  console.log(`  baseline, unfiltered first page: p50 ${baseline.p50.toFixed(1)} ms  p99 ${baseline.p99.toFixed(1)} ms`);
  console.log(
    `  filtered first page:             p50 ${filtered.p50.toFixed(1)} ms  p99 ${filtered.p99.toFixed(1)} ms  (${(filtered.p99 / baseline.p99).toFixed(2)}x baseline p99)`,
  );
  console.log(`  target p99 < ${TARGET_P99_MS} ms: ${met ? 'met' : 'not met'}`);
} finally {
  if (child) {
    child.removeAllListeners('exit');
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await sql.raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).execute(store.db);
  await store.close();
  await rm(dataDir, { recursive: true, force: true });
}
