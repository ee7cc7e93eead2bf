#!/usr/bin/env node
// Reports benchmark (apps/server/bench/reports.mjs), from dist.
//
//   node bench/reports.mjs [--devices 100000] [--findings 10000] [--artifacts 200] [--products 10]
//
// On PostgreSQL (SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL); without one it reports
// itself not measured. A tenant of D devices, A artifacts in P products' releases, every
// device running one of them (the fleet index), F findings spread over the artifacts (a
// tenth known exploited), one group per hundred devices. Each of the four documents
// (vulnerability and readiness, PDF and JSON twin) is generated in a fresh server process,
// requested over loopback HTTP and read to the end. Its baseline is the same process start
// (store opened, app built, listening) serving a static file of exactly the report's bytes
// through a bare handler, read the same way.
//   time: generation to last byte / static bytes to last byte (printed), and the generation
//     time against its target (docs/reports.md "Performance");
//   memory: peak RSS of the generating process / peak RSS of the baseline process, against
//     its target (a report streams: it adds little to what the server holds anyway).
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';

const here = import.meta.dirname;
const dist = join(here, '..', 'dist');

/** GET over loopback, the body written to `saveTo` as it arrives; answers its size. */
function fetchBody(port, path, headers, saveTo) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      if (res.statusCode !== 200) {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => reject(new Error(`${path} answered ${res.statusCode}: ${Buffer.concat(chunks).toString().slice(0, 300)}`)));
        return;
      }
      let bytes = 0;
      res.on('data', (c) => (bytes += c.length));
      const out = createWriteStream(saveTo);
      res.pipe(out);
      out.on('finish', () => resolve(bytes));
      out.on('error', reject);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

// --- child: one measured process (a report, or its static baseline) ---
if (process.argv[2] === '--child') {
  const cfg = JSON.parse(await readFile(process.argv[3], 'utf8'));
  const { openStore } = await import(join(dist, 'store', 'open.js'));
  const { buildApp } = await import(join(dist, 'app.js'));
  const store = await openStore({ databaseUrl: cfg.databaseUrl, schema: cfg.schema });
  const app = await buildApp({
    store,
    config: {
      dataDir: cfg.dataDir,
      databaseUrl: cfg.databaseUrl,
      databaseSchema: cfg.schema,
      httpAddr: { host: '127.0.0.1', port: 0 },
      deviceAddr: { host: '127.0.0.1', port: 0 },
      admin: undefined,
    },
    now: () => new Date(),
    logger: false,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  let port = app.server.address().port;
  let path = cfg.path;
  let bare;
  if (cfg.staticFile !== undefined) {
    // the baseline: the same bytes from a file through a bare handler, streamed the same way
    bare = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': cfg.contentType, 'content-length': cfg.bytes });
      createReadStream(cfg.staticFile).pipe(res);
    });
    await new Promise((r) => bare.listen(0, '127.0.0.1', r));
    port = bare.address().port;
    path = '/static';
  }
  const headers = { authorization: `Bearer ${cfg.key}` };
  const t0 = performance.now();
  const bytes = await fetchBody(port, path, headers, cfg.saveTo);
  const ms = performance.now() - t0;
  bare?.close();
  await app.close();
  await store.close();
  // maxRSS: the process's peak resident set (kilobytes), start-up included in both kinds of child
  process.stdout.write(`${JSON.stringify({ ms, bytes, maxRssKb: process.resourceUsage().maxRSS })}\n`);
  process.exit(0);
}

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const DEVICES = arg('devices', 100_000);
const FINDINGS = arg('findings', 10_000);
const ARTIFACTS = arg('artifacts', 200);
const PRODUCTS = arg('products', 10);
const pgUrl = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
// docs/reports.md "Performance": an export an operator waits for, and memory that does not grow with the fleet
const TARGETS = { seconds: 10, rss: 1.5 };

if (!pgUrl) {
  console.log('reports bench: not measured (needs PostgreSQL: set SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL)');
  process.exit(0);
}

const { openStore } = await import(join(dist, 'store', 'open.js'));
const { migrateToLatest } = await import(join(dist, 'store', 'migrate.js'));
const { newSecret } = await import(join(dist, 'auth', 'secrets.js'));
const { insertApiKey } = await import(join(dist, 'resources', 'api-keys', 'queries.js'));

const schema = `bench_${randomBytes(4).toString('hex')}`;
const store = await openStore({ databaseUrl: pgUrl, schema });
const dir = await mkdtemp(join(tmpdir(), 'svc-bench-reports-'));
const results = [];
try {
  await migrateToLatest(store);
  const db = store.db;
  const tenant = randomUUID();
  const now = new Date();
  await sql`INSERT INTO tenants (id, name, is_default) VALUES (${tenant}, 'bench', false)`.execute(db);
  await sql`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
    SELECT ${tenant}::uuid, 'app-' || (i % ${PRODUCTS}), '1.0.' || i, 'config', 'application/octet-stream', 'f.bin', 'sha256:' || lpad(to_hex(i), 64, 'e'), 1, 'x/' || i, ${now}, ${now}
    FROM generate_series(1, ${ARTIFACTS}::int) i`.execute(db);
  // half the artifacts carry an SBOM
  await sql`INSERT INTO artifact_sboms (artifact_id, tenant_id, format, content_type, bytes, digest, created_at)
    SELECT id, tenant_id, 'cyclonedx', 'application/vnd.cyclonedx+json', '\\x7b7d'::bytea, 'sha256:' || repeat('0', 64), ${now}
    FROM artifacts WHERE tenant_id = ${tenant} AND split_part(version, '.', 3)::int % 2 = 0`.execute(db);
  // one release per artifact, of its product, and the index of what each release names (kept by the releases trigger from a signed envelope)
  await sql`INSERT INTO releases (tenant_id, product, version, payload_digest, envelope_digest, keyid, target, envelope_bytes, created_at)
    SELECT tenant_id, 'product-' || split_part(name, '-', 2), version, 'sha256:' || repeat('1', 64), 'sha256:' || repeat('2', 64), 'bench-keyid', 'releases/' || id,
      convert_to('{}', 'UTF8'), ${now}::timestamptz - ((${ARTIFACTS}::int - split_part(version, '.', 3)::int) || ' minutes')::interval
    FROM artifacts WHERE tenant_id = ${tenant}`.execute(db);
  await sql`INSERT INTO vuln_release_artifacts (tenant_id, release_id, product, version, component, artifact_id, created_at)
    SELECT r.tenant_id, r.id, r.product, r.version, 'app', a.id, r.created_at
    FROM releases r JOIN artifacts a ON a.tenant_id = r.tenant_id AND a.version = r.version WHERE r.tenant_id = ${tenant}`.execute(db);
  await sql`INSERT INTO devices (tenant_id, name, status, profile)
    SELECT ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0'), CASE WHEN i % 10 = 0 THEN 'offline' ELSE 'online' END, 'linux-arm64' FROM generate_series(1, ${DEVICES}::int) i`.execute(
    db,
  );
  await sql`INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, observed_at)
    SELECT ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0'), 'app', 'sha256:' || lpad(to_hex(1 + i % ${ARTIFACTS}), 64, 'e'), CASE WHEN i % 4 = 0 THEN 'legacy' ELSE 'receipt' END,
      gen_random_uuid(), ${now} FROM generate_series(1, ${DEVICES}::int) i`.execute(db);
  await sql`INSERT INTO device_groups (tenant_id, name, snapshot_digest, created_at, updated_at)
    SELECT ${tenant}::uuid, 'group-' || g, 'x', ${now}, ${now} FROM generate_series(0, ${Math.ceil(DEVICES / 100) - 1}::int) g`.execute(db);
  await sql`INSERT INTO device_group_members (group_id, tenant_id, device_name)
    SELECT g.id, ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0') FROM generate_series(1, ${DEVICES}::int) i
    JOIN device_groups g ON g.tenant_id = ${tenant} AND g.name = 'group-' || (i / 100)`.execute(db);
  await sql`INSERT INTO vuln_findings (tenant_id, artifact_id, vuln_key, component_purl, component_name, component_version, ecosystem, advisory_ids, aliases,
      summary, severity, severity_rank, severity_source, cvss_score, fixed_versions, matched_by, known_exploited, kev_date_added, vex_status, first_seen_at, updated_at)
    SELECT ${tenant}::uuid, a.id, 'CVE-2098-' || (100000 + k), 'pkg:npm/p' || k || '@1.0.0', 'p' || k, '1.0.0', 'npm', ARRAY['GHSA-bnch-' || k], ARRAY['CVE-2098-' || (100000 + k)],
      'bench advisory ' || k, (ARRAY['low', 'medium', 'high', 'critical'])[1 + k % 4], 1 + k % 4, 'cvss_v3', 5.0 + (k % 5), ARRAY['1.0.1'], '[]'::jsonb,
      k % 10 = 0, CASE WHEN k % 10 = 0 THEN '2024-01-01' END, CASE WHEN k % 7 = 0 THEN 'not_affected' END,
      ${now}::timestamptz - (k % 200 || ' days')::interval, ${now}
    FROM generate_series(1, ${FINDINGS}::int) k JOIN artifacts a ON a.tenant_id = ${tenant} AND a.version = '1.0.' || (1 + k % ${ARTIFACTS})`.execute(db);
  await sql`VACUUM ANALYZE`.execute(db);
  const secret = newSecret('svck');
  await insertApiKey(db, { tenantId: tenant, name: 'bench', role: 'viewer', prefix: secret.prefix, keyHash: secret.hash, createdBy: null });

  const child = async (extra) => {
    const cfgFile = join(dir, `cfg-${randomUUID()}.json`);
    await writeFile(cfgFile, JSON.stringify({ databaseUrl: pgUrl, schema, dataDir: dir, key: secret.plaintext, ...extra }));
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [join(here, 'reports.mjs'), '--child', cfgFile], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1))) : reject(new Error(`child exited ${code}: ${out}`))));
    });
  };
  const header = `${DEVICES} devices, ${FINDINGS} findings, ${ARTIFACTS} artifacts in ${PRODUCTS} products`;
  for (const kind of ['vulnerability', 'readiness']) {
    for (const format of ['pdf', 'json']) {
      const path = `/api/v1/reports/${kind}.${format}`;
      const file = join(dir, `${kind}.${format}`);
      const r = await child({ path, saveTo: file });
      // the baseline serves the same bytes: this very report, from its file
      const size = (await stat(file)).size;
      const b = await child({
        path,
        saveTo: join(dir, 'copy'),
        staticFile: file,
        bytes: size,
        contentType: format === 'pdf' ? 'application/pdf' : 'application/json',
      });
      const timeOk = r.ms <= TARGETS.seconds * 1000;
      const rss = r.maxRssKb / b.maxRssKb;
      const rssOk = rss <= TARGETS.rss;
      results.push({ name: `${kind}.${format} time`, met: timeOk }, { name: `${kind}.${format} memory`, met: rssOk });
      console.log(
        `[postgres] ${kind} report (${format}), ${header}: ${r.bytes} bytes in ${r.ms.toFixed(0)} ms (target <= ${TARGETS.seconds} s: ${timeOk ? 'met' : 'NOT MET'}); ` +
          `the same bytes static ${b.ms.toFixed(1)} ms, ratio ${(r.ms / b.ms).toFixed(1)}x; ` +
          `peak RSS ${(r.maxRssKb / 1024).toFixed(0)} MB, static ${(b.maxRssKb / 1024).toFixed(0)} MB, ratio ${rss.toFixed(2)}x (target <= ${TARGETS.rss}x: ${rssOk ? 'met' : 'NOT MET'})`,
      );
    }
  }
} finally {
  await sql`DROP SCHEMA ${sql.id(schema)} CASCADE`.execute(store.db).catch(() => undefined);
  await store.close();
  await rm(dir, { recursive: true, force: true });
}

const missed = results.filter((r) => !r.met);
console.log(
  `reports bench: ${results.length - missed.length} of ${results.length} targets met${missed.length ? ` (not met: ${missed.map((m) => m.name).join('; ')})` : ''}`,
);
