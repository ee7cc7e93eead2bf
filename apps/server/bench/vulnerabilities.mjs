#!/usr/bin/env node
// Vulnerability intelligence benchmark (apps/server/bench/vulnerabilities.mjs), from dist.
//
//   node bench/vulnerabilities.mjs [--records 20000] [--artifacts 10000] [--components 50] [--devices 100000] [--findings 10000]
//
// On PostgreSQL (SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL); without one, the first two
// run on the embedded database and the exposure query is reported as not measured.
// 1. Feed import: an OSV zip of N records through the import (survey, schema validation,
//    batches with their audit rows, completion), the OSV schema compiled beforehand as in a
//    server that has read one record before. Baseline: the same records JSON-parsed and
//    inserted as-is into a bare table in batches of the same size. Ratio = import / baseline.
// 2. Re-analysis of A artifacts x C components (index rows seeded in bulk) against advisories
//    naming a fifth of the packages, through the leased job until the run completes.
//    Baseline: the candidate join (components x affected packages x advisories) read into
//    the process once. Ratio = job / baseline.
// 3. Exposure (GET /vulnerabilities/{id}/exposure through the app) at D devices and F
//    findings, for a vulnerability whose artifacts run on every device (the worst case) and
//    one on a tenth of them; p50/p95 of 20 requests. Baseline: a bare indexed count of the
//    fleet index in the same database.
// Each line prints the measured ratio, the target and met / not met.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, crc32 } from 'node:zlib';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { openStore } from '../dist/store/open.js';
import { migrateToLatest } from '../dist/store/migrate.js';
import { buildApp } from '../dist/app.js';
import { newSecret } from '../dist/auth/secrets.js';
import { insertApiKey } from '../dist/resources/api-keys/queries.js';
import { runUnitOfWork, systemActor } from '../dist/resources/unit-of-work.js';
import { importOsvArchive } from '../dist/resources/vuln-feeds/import.js';
import { readOsvRecord } from '../dist/resources/vuln-feeds/osv.js';
import { SERVER_TUNING } from '../dist/limits.js';
import { enqueueAnalysisForAllTenants } from '../dist/resources/vuln-analysis/queries.js';
import { runVulnAnalysis } from '../dist/jobs/vuln-analysis.js';

const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const RECORDS = arg('records', 20_000);
const ARTIFACTS = arg('artifacts', 10_000);
const COMPONENTS = arg('components', 50);
const DEVICES = arg('devices', 100_000);
const FINDINGS = arg('findings', 10_000);
const PACKAGES = 5_000;
const pgUrl = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
// Ratios against the same-run baseline, and what an operator needs: npm's OSV archive (the
// largest, about 200k records) imported in under two minutes; every tenant's inventories
// re-matched within five minutes of an import; an exposure answer well under a second.
const TARGETS = { feed: 4, feedRecordsPerS: 2000, reanalysis: 8, reanalysisS: 300, exposureP95Ms: 250 };
const results = [];
const verdict = (name, ok) => {
  results.push({ name, met: ok });
  return ok ? 'met' : 'NOT MET';
};
const report = (name, ratio, target, extra, absolute) => {
  console.log(
    `${name}: ${extra}; ratio ${ratio.toFixed(2)}x (target <= ${target}x): ${verdict(`${name} ratio`, ratio <= target)}; ${absolute.text}: ${verdict(`${name} ${absolute.text}`, absolute.ok)}`,
  );
};
const ms = (t) => `${t.toFixed(0)} ms`;

function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const { name, data } of entries) {
    const raw = Buffer.from(data);
    const body = deflateRawSync(raw);
    const n = Buffer.from(name);
    const l = Buffer.alloc(30);
    l.writeUInt32LE(0x04034b50, 0);
    l.writeUInt16LE(20, 4);
    l.writeUInt16LE(0x0800, 6);
    l.writeUInt16LE(8, 8);
    l.writeUInt32LE(crc32(raw), 14);
    l.writeUInt32LE(body.length, 18);
    l.writeUInt32LE(raw.length, 22);
    l.writeUInt16LE(n.length, 26);
    const c = Buffer.alloc(46);
    c.writeUInt32LE(0x02014b50, 0);
    c.writeUInt16LE(20, 4);
    c.writeUInt16LE(20, 6);
    c.writeUInt16LE(0x0800, 8);
    c.writeUInt16LE(8, 10);
    c.writeUInt32LE(crc32(raw), 16);
    c.writeUInt32LE(body.length, 20);
    c.writeUInt32LE(raw.length, 24);
    c.writeUInt16LE(n.length, 28);
    c.writeUInt32LE(offset, 42);
    locals.push(l, n, body);
    centrals.push(c, n);
    offset += 30 + n.length + body.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const record = (i) => ({
  schema_version: '1.6.0',
  id: `GHSA-bnch-${String(i).padStart(4, '0').slice(-4)}-${String(Math.floor(i / 10000)).padStart(4, '0')}`,
  modified: '2024-01-01T00:00:00Z',
  published: '2023-12-01T00:00:00Z',
  aliases: [`CVE-2099-${100000 + i}`],
  summary: `bench advisory ${i}`,
  affected: [
    { package: { ecosystem: 'npm', name: `bench-pkg-${i % PACKAGES}` }, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '1.0.5' }] }] },
  ],
  severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' }],
});

async function session(label, storeOpts) {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const store = await openStore({ ...storeOpts, schema });
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-vuln-'));
  try {
    await migrateToLatest(store);
    const db = store.db;
    const tenant = randomUUID();
    await sql`INSERT INTO tenants (id, name, is_default) VALUES (${tenant}, 'bench', false)`.execute(db);
    const run = (command, input) => runUnitOfWork(db, { tenant, actor: systemActor('bench'), now: new Date() }, (uow) => command(uow, input));

    // 1. feed import
    const records = Array.from({ length: RECORDS }, (_, i) => record(i));
    const file = join(dir, 'all.zip');
    await writeFile(file, zip(records.map((r) => ({ name: `${r.id}.json`, data: JSON.stringify(r) }))));
    // a running server compiles the OSV schema once, at its first record: not part of an import's rate
    if ('skip' in readOsvRecord(Buffer.from(JSON.stringify(records[0])))) throw new Error('the bench record is not a valid OSV record');
    let t0 = performance.now();
    const imp = await importOsvArchive(run, file, 'bench');
    const tImport = performance.now() - t0;
    if (imp.row.added !== RECORDS) throw new Error(`import added ${imp.row.added} of ${RECORDS}`);
    await sql`CREATE TABLE bench_raw (id text PRIMARY KEY, modified timestamptz NOT NULL, record jsonb NOT NULL)`.execute(db);
    const texts = records.map((r) => JSON.stringify(r));
    t0 = performance.now();
    for (let i = 0; i < texts.length; i += SERVER_TUNING.feedBatchRecords) {
      const rows = texts
        .slice(i, i + SERVER_TUNING.feedBatchRecords)
        .map((t) => JSON.parse(t))
        .map((r) => ({ id: r.id, modified: r.modified, record: JSON.stringify(r) }));
      await db.transaction().execute((trx) => trx.insertInto('bench_raw').values(rows).execute());
    }
    const tRaw = performance.now() - t0;
    const rate = RECORDS / (tImport / 1000);
    report(
      `[${label}] feed import, ${RECORDS} OSV records`,
      tImport / tRaw,
      TARGETS.feed,
      `${ms(tImport)} (${Math.round(rate)} records/s); bare parse + insert ${ms(tRaw)} (${Math.round(RECORDS / (tRaw / 1000))} records/s)`,
      { text: `rate >= ${TARGETS.feedRecordsPerS} records/s`, ok: rate >= TARGETS.feedRecordsPerS },
    );

    // 2. re-analysis: A artifacts x C components, seeded in bulk
    const now = new Date();
    await sql`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
      SELECT ${tenant}::uuid, 'bench-' || i, '1.0.0', 'config', 'application/octet-stream', 'f.bin', 'sha256:' || lpad(to_hex(i), 64, '0'), 1, 'artifacts/bench-' || i || '/1.0.0/f.bin', ${now}, ${now}
      FROM generate_series(1, ${ARTIFACTS}::int) i`.execute(db);
    await sql`INSERT INTO artifact_sboms (artifact_id, tenant_id, format, content_type, bytes, digest, created_at)
      SELECT id, tenant_id, 'cyclonedx', 'application/vnd.cyclonedx+json', '\\x7b7d'::bytea, 'sha256:' || repeat('0', 64), ${now} FROM artifacts WHERE tenant_id = ${tenant}`.execute(
      db,
    );
    await sql`INSERT INTO sbom_components (tenant_id, artifact_id, ordinal, purl, package_key, ecosystem, name, version)
      SELECT a.tenant_id, a.id, c, 'pkg:npm/bench-pkg-' || p || '@1.0.' || (c % 10), 'npm|bench-pkg-' || p, 'npm', 'bench-pkg-' || p, '1.0.' || (c % 10)
      FROM artifacts a, generate_series(0, ${COMPONENTS - 1}::int) c, LATERAL (SELECT (abs(hashtext(a.id::text || c)) % (${PACKAGES} * 5)) AS p) x
      WHERE a.tenant_id = ${tenant}`.execute(db);
    if (store.driver === 'postgres') await sql`ANALYZE`.execute(db);
    await enqueueAnalysisForAllTenants(db, 'bench', null, new Date());
    t0 = performance.now();
    while ((await runVulnAnalysis(db, () => new Date(), { owner: 'bench', maxBatches: 1000 })) > 0);
    const tAnalysis = performance.now() - t0;
    const runRow = (await sql`SELECT * FROM vuln_analysis_runs WHERE tenant_id = ${tenant}`.execute(db)).rows[0];
    t0 = performance.now();
    const cand =
      await sql`SELECT c.artifact_id, c.version, a.affected FROM sbom_components c JOIN vuln_affected_packages p ON p.package_key = c.package_key JOIN vuln_advisories a ON a.id = p.advisory_id WHERE c.tenant_id = ${tenant}`.execute(
        db,
      );
    const tJoin = performance.now() - t0;
    report(
      `[${label}] re-analysis, ${ARTIFACTS} artifacts x ${COMPONENTS} components`,
      tAnalysis / tJoin,
      TARGETS.reanalysis,
      `${ms(tAnalysis)} (${runRow.findings_added} findings from ${cand.rows.length} candidate pairs, state ${runRow.state}); candidate join read once ${ms(tJoin)}`,
      { text: `within ${TARGETS.reanalysisS} s`, ok: tAnalysis <= TARGETS.reanalysisS * 1000 },
    );
    return { store, db, tenant };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function exposure(label, s) {
  const { db, store } = s;
  const tenant = randomUUID();
  await sql`INSERT INTO tenants (id, name, is_default) VALUES (${tenant}, 'exposure', false)`.execute(db);
  const now = new Date();
  const ARTS = 100;
  await sql`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
    SELECT ${tenant}::uuid, 'fleet-app', '1.0.' || i, 'config', 'application/octet-stream', 'f.bin', 'sha256:' || lpad(to_hex(1000000 + i), 64, 'f'), 1, 'x', ${now}, ${now} FROM generate_series(1, ${ARTS}) i`.execute(
    db,
  );
  await sql`INSERT INTO devices (tenant_id, name, status, profile) SELECT ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0'), 'online', 'linux-arm64' FROM generate_series(1, ${DEVICES}::int) i`.execute(
    db,
  );
  // what devices run: the fleet index rows the receipt trigger keeps, one artifact per device
  await sql`INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, observed_at)
    SELECT ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0'), 'app', 'sha256:' || lpad(to_hex(1000000 + 1 + (i % ${ARTS})), 64, 'f'), 'receipt', gen_random_uuid(), ${now} FROM generate_series(1, ${DEVICES}::int) i`.execute(
    db,
  );
  // 100 groups of D/100 devices
  await sql`INSERT INTO device_groups (tenant_id, name, snapshot_digest, created_at, updated_at) SELECT ${tenant}::uuid, 'group-' || g, 'x', ${now}, ${now} FROM generate_series(0, 99) g`.execute(
    db,
  );
  await sql`INSERT INTO device_group_members (group_id, tenant_id, device_name)
    SELECT g.id, ${tenant}::uuid, 'dev-' || lpad(i::text, 7, '0') FROM generate_series(1, ${DEVICES}::int) i JOIN device_groups g ON g.tenant_id = ${tenant} AND g.name = 'group-' || (i % 100)`.execute(
    db,
  );
  // F findings: vulnerability k on artifact (k % ARTS) for most; CVE-2099-ALL on every artifact; CVE-2099-TENTH on ten
  await sql`INSERT INTO vuln_findings (tenant_id, artifact_id, vuln_key, component_purl, component_name, component_version, ecosystem, advisory_ids, aliases, severity, severity_rank, severity_source, fixed_versions, matched_by, first_seen_at, updated_at)
    SELECT ${tenant}::uuid, a.id, 'CVE-2098-' || (100000 + k), 'pkg:npm/p' || k || '@1.0.0', 'p' || k, '1.0.0', 'npm', ARRAY['GHSA-x'], ARRAY['CVE-2098-' || (100000 + k)], 'high', 3, 'database', ARRAY['1.0.1'], '[]'::jsonb, ${now}, ${now}
    FROM generate_series(1, ${FINDINGS - ARTS - 10}::int) k JOIN artifacts a ON a.tenant_id = ${tenant} AND a.version = '1.0.' || (1 + k % ${ARTS})`.execute(
    db,
  );
  await sql`INSERT INTO vuln_findings (tenant_id, artifact_id, vuln_key, component_purl, component_name, component_version, ecosystem, advisory_ids, aliases, severity, severity_rank, severity_source, fixed_versions, matched_by, first_seen_at, updated_at)
    SELECT ${tenant}::uuid, a.id, v.key, 'pkg:npm/all@1.0.0', 'all', '1.0.0', 'npm', ARRAY['GHSA-y'], ARRAY[v.key], 'critical', 4, 'database', ARRAY['2.0.0'], '[]'::jsonb, ${now}, ${now}
    FROM artifacts a, (VALUES ('CVE-2099-0000001', ${ARTS}), ('CVE-2099-0000002', 10)) v(key, n)
    WHERE a.tenant_id = ${tenant} AND split_part(a.version, '.', 3)::int <= v.n`.execute(db);
  await sql`INSERT INTO vuln_ids (id, advisory_id, vuln_key) SELECT id, id, vuln_key FROM (VALUES ('CVE-2099-0000001', 'CVE-2099-0000001'), ('CVE-2099-0000002', 'CVE-2099-0000002')) v(id, vuln_key) ON CONFLICT DO NOTHING`
    .execute(db)
    .catch(async () => {
      // vuln_ids references an advisory: give the two vulnerabilities one each
      for (const id of ['CVE-2099-0000001', 'CVE-2099-0000002']) {
        await sql`INSERT INTO vuln_advisories (id, vuln_key, aliases, modified, severity, severity_source, affected, updated_at) VALUES (${id}, ${id}, '{}', ${now}, 'critical', 'database', '[]', ${now}) ON CONFLICT DO NOTHING`.execute(
          db,
        );
        await sql`INSERT INTO vuln_ids (id, advisory_id, vuln_key) VALUES (${id}, ${id}, ${id}) ON CONFLICT DO NOTHING`.execute(db);
      }
    });
  await sql`VACUUM ANALYZE`.execute(db);
  const findings = Number((await sql`SELECT count(*) AS n FROM vuln_findings WHERE tenant_id = ${tenant}`.execute(db)).rows[0].n);

  const secret = newSecret('svck');
  await insertApiKey(db, { tenantId: tenant, name: 'bench', role: 'viewer', prefix: secret.prefix, keyHash: secret.hash, createdBy: null });
  const app = await buildApp({
    store,
    config: {
      dataDir: tmpdir(),
      databaseUrl: undefined,
      databaseSchema: store.schema,
      httpAddr: { host: '127.0.0.1', port: 0 },
      deviceAddr: { host: '127.0.0.1', port: 0 },
      admin: undefined,
    },
    now: () => new Date(),
    logger: false,
  });
  const headers = { authorization: `Bearer ${secret.plaintext}` };
  const time = async (fn, n = 20) => {
    await fn();
    const t = [];
    for (let i = 0; i < n; i++) {
      const s0 = performance.now();
      await fn();
      t.push(performance.now() - s0);
    }
    t.sort((a, b) => a - b);
    return { p50: t[Math.floor(n / 2)], p95: t[Math.floor(n * 0.95)] };
  };
  try {
    const baseline = await time(() => sql`SELECT count(*) FROM vuln_device_software WHERE tenant_id = ${tenant}`.execute(db));
    for (const [vuln, what] of [
      ['CVE-2099-0000001', 'every device'],
      ['CVE-2099-0000002', 'a tenth of the devices'],
    ]) {
      let body;
      const t = await time(async () => {
        const res = await app.inject({ method: 'GET', url: `/api/v1/vulnerabilities/${vuln}/exposure`, headers });
        if (res.statusCode !== 200) throw new Error(`exposure answered ${res.statusCode}: ${res.body}`);
        body = JSON.parse(res.body);
      });
      console.log(
        `[${label}] exposure query, ${DEVICES} devices, ${findings} findings, vulnerability on ${what} (${body.total} exposed, ${body.counts.groups} groups): p50 ${ms(t.p50)}, p95 ${ms(t.p95)} (target p95 <= ${TARGETS.exposureP95Ms} ms: ${verdict(`exposure on ${what}`, t.p95 <= TARGETS.exposureP95Ms)}); bare indexed count of the fleet index p50 ${ms(baseline.p50)}; ratio ${(t.p50 / baseline.p50).toFixed(2)}x`,
      );
    }
  } finally {
    await app.close();
  }
}

let s;
if (pgUrl) {
  s = await session('postgres', { databaseUrl: pgUrl });
  try {
    await exposure('postgres', s);
  } finally {
    await sql`DROP SCHEMA ${sql.id(s.store.schema)} CASCADE`.execute(s.db).catch(() => undefined);
    await s.store.close();
  }
} else {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-vuln-pglite-'));
  s = await session('embedded', { pgliteDir: join(dir, 'db') });
  await s.store.close();
  await rm(dir, { recursive: true, force: true });
  console.log('exposure query: not measured (needs PostgreSQL: set SVC_BENCH_DATABASE_URL or SVC_TEST_DATABASE_URL)');
}
const missed = results.filter((r) => !r.met);
console.log(
  `vulnerabilities bench: ${results.length - missed.length} of ${results.length} targets met${missed.length ? ` (not met: ${missed.map((m) => m.name).join('; ')})` : ''}`,
);
