import { sql, type RawBuilder } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';

/**
 * spec §8 on every paginated list of the API: `limit` defaults to 50, values above 200 are
 * clamped to 200, `offset` is echoed and skips exactly that many items, and the body carries
 * the collection key, `total`, `limit`, `offset` and `counts`. Each row seeds more than 200
 * items of its collection straight into the tables (so the clamp is visible in the page, not
 * only in the echoed `limit`).
 */
interface ListRow {
  /** The list's URL under /api/v1 (a query string may follow). */
  url: string;
  /** The route's path in the OpenAPI document when the URL fills in a parameter. */
  route?: string;
  /** The collection key of the body (spec §8). */
  key: string;
  /** Inserts at least 201 items of the collection into the tenant. */
  seed: (tenant: string) => RawBuilder<unknown>;
  /**
   * Whether `counts` is asserted (an object of integers, spec §8). Every list has them; a new
   * list may start with false until its breakdown lands.
   */
  counts: boolean;
}

const N = 205;

/** One device group (a deployment's target), in a CTE of a seed. */
const newGroup = (t: string, name: string) =>
  sql`INSERT INTO device_groups (tenant_id, name, snapshot_digest, created_at, updated_at) VALUES (${t}, ${name}, 'sha256:' || repeat('0', 64), now(), now()) RETURNING id`;

/** One release of a product (a signed deployment's), in a CTE of a seed. */
const newRelease = (t: string, product: string) =>
  sql`INSERT INTO releases (tenant_id, product, version, payload_digest, envelope_digest, keyid, target, envelope_bytes, created_at)
    VALUES (${t}, ${product}, '1.0.0', 'sha256:' || repeat('1', 64), 'sha256:' || repeat('2', 64), 'pg-keyid', 'releases/' || ${product}, convert_to('{}', 'UTF8'), now()) RETURNING id`;

/** One open Article 14 case with a fixed id (the parent of a case sub-list), in a CTE of a seed. */
const newCase = (t: string, id: string) =>
  sql`INSERT INTO cases (id, tenant_id, kind, state, title, owner, aware_at, created_by, created_at, updated_at)
    VALUES (${id}::uuid, ${t}, 'exploited_vulnerability', 'open', 'pg-parent', 'pg', now(), 'pg', now(), now()) RETURNING id`;
const CASE_SUBMISSIONS = '7b0c0a11-0000-4000-8000-000000000001';
const CASE_ATTACHMENTS = '7b0c0a11-0000-4000-8000-000000000002';
const CASE_AUDIT = '7b0c0a11-0000-4000-8000-000000000003';
const CASE_PACKETS = '7b0c0a11-0000-4000-8000-000000000004';

/** One artifact with a fixed id (a list under it names the id), in a CTE of a seed; `digit` fills its digest. */
const newArtifact = (t: string, id: string, name: string, digit: string) =>
  sql`INSERT INTO artifacts (id, tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
    VALUES (${id}::uuid, ${t}, ${name}, '1.0.0', 'config', 'application/octet-stream', 'pg.conf', 'sha256:' || repeat(${digit}::text, 64), 1, 'pg/' || ${name}::text, now(), now())
    RETURNING id`;

/** N findings of the artifact of CTE `a`, of vulnerabilities `CVE-2099-<series><i>`, severities mixed; the INSERT of a seed. */
const newFindings = (t: string, series: string) =>
  sql`INSERT INTO vuln_findings (tenant_id, artifact_id, vuln_key, component_purl, component_name, component_version, ecosystem, advisory_ids, aliases,
      severity, severity_rank, severity_source, fixed_versions, matched_by, first_seen_at, updated_at)
    SELECT ${t}, a.id, 'CVE-2099-' || ${series}::text || lpad(i::text, 4, '0'), 'pkg:npm/pg@1.0.0', 'pg', '1.0.0', 'npm', ARRAY['GHSA-pg'],
      ARRAY['CVE-2099-' || ${series}::text || lpad(i::text, 4, '0')], (ARRAY['low', 'medium', 'high', 'critical'])[1 + i % 4], 1 + i % 4, 'database', '{}', '[]',
      now(), now()
    FROM a, generate_series(1, ${N}) i`;

const ARTIFACT_COMPONENTS = '00000000-0000-4000-8000-00000000c001';
const ARTIFACT_FINDINGS = '00000000-0000-4000-8000-00000000c002';
const ARTIFACT_VEX = '00000000-0000-4000-8000-00000000c003';

const ROWS: ListRow[] = [
  {
    url: '/devices',
    key: 'devices',
    counts: true,
    seed: (t) => sql`INSERT INTO devices (tenant_id, name, status, profile)
      SELECT ${t}, 'pg-' || lpad(i::text, 4, '0'), CASE WHEN i % 3 = 0 THEN 'offline' ELSE 'online' END, 'linux-arm64' FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/devices/pg-history/history',
    key: 'history',
    counts: true,
    seed: (t) => sql`WITH d AS (INSERT INTO devices (tenant_id, name, status) VALUES (${t}, 'pg-history', 'online') RETURNING id)
      INSERT INTO device_history (tenant_id, device_id, event, at)
      SELECT ${t}, d.id, CASE WHEN i % 2 = 0 THEN 'online' ELSE 'offline' END, now() - i * interval '1 second' FROM d, generate_series(1, ${N}) i`,
  },
  {
    url: '/enroll-tokens',
    key: 'enroll_tokens',
    counts: true,
    seed: (t) => sql`INSERT INTO enroll_tokens (tenant_id, name, secret_hash, prefix, max_uses, expires_at, created_at)
      SELECT ${t}, 'pg', 'pg-token-' || i, 'svce_pg', 1, now() + interval '1 day', now() - i * interval '1 second' FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/users',
    key: 'users',
    counts: true,
    seed: (t) => sql`INSERT INTO users (tenant_id, email, role, password_hash)
      SELECT ${t}, 'pg-' || lpad(i::text, 4, '0') || '@example.test', 'viewer', 'x' FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/api-keys',
    key: 'api_keys',
    counts: true,
    seed: (t) => sql`INSERT INTO api_keys (tenant_id, name, role, prefix, key_hash, created_at)
      SELECT ${t}, 'pg-' || i, 'viewer', 'svck_pg', 'pg-key-' || i, now() - i * interval '1 second' FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/audit',
    key: 'events',
    counts: true,
    seed: (t) => sql`INSERT INTO audit_events (tenant_id, actor, credential, action, target)
      SELECT ${t}, 'system:test', 'system', 'pg.event', 'n:' || i FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/artifacts',
    key: 'artifacts',
    counts: true,
    seed: (t) => sql`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
      SELECT ${t}, 'pg-art', '1.0.' || i, 'config', 'application/octet-stream', 'pg.conf', 'sha256:' || repeat('0', 64), 1, 'pg/' || i, now() - i * interval '1 second', now()
      FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/registries',
    key: 'registries',
    counts: true,
    seed: (t) => sql`INSERT INTO registries (tenant_id, name, url, created_at)
      SELECT ${t}, 'pg-reg-' || i, 'https://registry.example.test', now() - i * interval '1 second' FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/groups',
    key: 'groups',
    counts: true,
    seed: (t) => sql`INSERT INTO device_groups (tenant_id, name, snapshot_digest, created_at, updated_at)
      SELECT ${t}, 'pg-group-' || i, 'sha256:' || repeat('0', 64), now() - i * interval '1 second', now() FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/authorizer-keys',
    key: 'authorizer_keys',
    counts: true,
    seed: (t) => sql`INSERT INTO authorizer_keys (tenant_id, name, keyid, public_key_pem, created_at)
      SELECT ${t}, 'pg-key-' || i, 'pg-keyid-' || i, 'not read by the list', now() - i * interval '1 second' FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/evidence-keys',
    key: 'evidence_keys',
    counts: true,
    // retired keys 1..N and the current key N+1 (one current per tenant)
    seed: (t) => sql`INSERT INTO evidence_keys (tenant_id, seq, keyid, public_key_pem, valid_from, valid_until, created_by, retired_by)
      SELECT ${t}, i, 'pg-keyid-' || i, 'not read by the list', now() - (${N} + 2 - i) * interval '1 second',
        CASE WHEN i <= ${N} THEN now() - (${N} + 1 - i) * interval '1 second' END, 'pg', CASE WHEN i <= ${N} THEN 'pg' END
      FROM generate_series(1, ${N} + 1) i`,
  },
  {
    url: '/releases',
    key: 'releases',
    counts: true,
    seed: (t) => sql`INSERT INTO releases (tenant_id, product, version, payload_digest, envelope_digest, keyid, target, envelope_bytes, created_at)
      SELECT ${t}, 'pg-product', '1.0.' || i, 'sha256:' || repeat('1', 64), 'sha256:' || repeat('2', 64), 'pg-keyid', 'releases/pg/' || i, convert_to('{}', 'UTF8'), now() - i * interval '1 second'
      FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/release-transactions',
    key: 'release_transactions',
    counts: true,
    seed: (t) => sql`WITH g AS (${newGroup(t, 'pg-tx-group')}), r AS (${newRelease(t, 'pg-tx-product')})
      INSERT INTO deployments (tenant_id, kind, release_id, group_id, snapshot_digest, member_count, device_count, created_at)
      SELECT ${t}, 'signed', r.id, g.id, 'sha256:' || repeat('0', 64), 1, 0, now() - i * interval '1 second' FROM g, r, generate_series(1, ${N}) i`,
  },
  {
    url: '/rollouts',
    key: 'rollouts',
    counts: true,
    seed: (t) => sql`WITH g AS (${newGroup(t, 'pg-rollout-group')}), a AS (
        INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
        VALUES (${t}, 'pg-rollout-art', '1.0.0', 'config', 'application/octet-stream', 'pg.conf', 'sha256:' || repeat('0', 64), 1, 'pg/rollout', now(), now()) RETURNING id
      ), d AS (
        INSERT INTO deployments (tenant_id, kind, artifact_id, group_id, snapshot_digest, member_count, device_count, created_at)
        SELECT ${t}, 'legacy', a.id, g.id, 'sha256:' || repeat('0', 64), ${N}, 0, now() FROM a, g RETURNING id, artifact_id
      )
      INSERT INTO rollouts (tenant_id, deployment_id, kind, artifact_id, component, group_index, position, created_at)
      SELECT ${t}, d.id, 'legacy', d.artifact_id, 'pg', 0, i, now() - i * interval '1 second' FROM d, generate_series(1, ${N}) i`,
  },
  {
    url: '/release-receipts',
    key: 'release_receipts',
    counts: true,
    seed: (t) => sql`WITH g AS (${newGroup(t, 'pg-receipt-group')}), r AS (${newRelease(t, 'pg-receipt-product')}), d AS (
        INSERT INTO deployments (tenant_id, kind, release_id, group_id, snapshot_digest, member_count, device_count, created_at)
        SELECT ${t}, 'signed', r.id, g.id, 'sha256:' || repeat('0', 64), 1, ${N}, now() FROM g, r RETURNING id, release_id
      )
      INSERT INTO release_receipts (tenant_id, deployment_id, release_id, device_name, activation, health, payload_digest, envelope_digest, envelope_bytes, payload, accepted_at)
      SELECT ${t}, d.id, d.release_id, 'pg-' || i, 'activated', 'healthy', 'sha256:' || repeat('3', 64), 'sha256:pg-receipt-' || i, convert_to('{}', 'UTF8'), '{}', now() - i * interval '1 second'
      FROM d, generate_series(1, ${N}) i`,
  },
  {
    url: '/cases',
    key: 'cases',
    counts: true,
    seed: (t) => sql`INSERT INTO cases (tenant_id, kind, state, title, owner, aware_at, created_by, created_at, updated_at)
      SELECT ${t}, CASE WHEN i % 2 = 0 THEN 'severe_incident' ELSE 'exploited_vulnerability' END, CASE WHEN i % 3 = 0 THEN 'not_reportable' ELSE 'open' END,
        'pg-case-' || i, 'pg', now() - interval '1 day', 'pg', now() - i * interval '1 second', now()
      FROM generate_series(1, ${N}) i`,
  },
  {
    url: `/cases/${CASE_SUBMISSIONS}/submissions`,
    route: '/cases/{id}/submissions',
    key: 'submissions',
    counts: true,
    seed: (t) => sql`WITH c AS (${newCase(t, CASE_SUBMISSIONS)})
      INSERT INTO case_submissions (id, tenant_id, case_id, stage, document, digest, pdf_digest, pdf_length, created_by, created_at)
      SELECT gen_random_uuid(), ${t}, c.id, CASE WHEN i % 2 = 0 THEN 'early_warning' ELSE 'notification' END, convert_to('{}', 'UTF8'),
        'sha256:' || lpad(to_hex(i), 64, '0'), 'sha256:' || repeat('4', 64), 1, 'pg', now() - i * interval '1 second'
      FROM c, generate_series(1, ${N}) i`,
  },
  {
    url: `/cases/${CASE_PACKETS}/srp-packets`,
    route: '/cases/{id}/srp-packets',
    key: 'packets',
    counts: true,
    seed: (t) => sql`WITH c AS (${newCase(t, CASE_PACKETS)})
      INSERT INTO case_srp_packets (id, tenant_id, case_id, stage, form_version, document, digest, missing, created_by, created_at)
      SELECT gen_random_uuid(), ${t}, c.id, CASE WHEN i % 2 = 0 THEN 'early_warning' ELSE 'final_report' END, 'pg', convert_to('{}', 'UTF8'),
        'sha256:' || lpad(to_hex(i), 64, '0'), 0, 'pg', now() - i * interval '1 second'
      FROM c, generate_series(1, ${N}) i`,
  },
  {
    url: `/cases/${CASE_ATTACHMENTS}/attachments`,
    route: '/cases/{id}/attachments',
    key: 'attachments',
    counts: true,
    seed: (t) => sql`WITH c AS (${newCase(t, CASE_ATTACHMENTS)})
      INSERT INTO case_attachments (tenant_id, case_id, filename, content_type, digest, length, added_by, added_at)
      SELECT ${t}, c.id, 'pg-' || i || '.txt', 'text/plain', 'sha256:' || repeat('5', 64), 1, 'pg', now() - i * interval '1 second'
      FROM c, generate_series(1, ${N}) i`,
  },
  {
    url: `/cases/${CASE_AUDIT}/audit`,
    route: '/cases/{id}/audit',
    key: 'events',
    counts: true,
    seed: (t) => sql`WITH c AS (${newCase(t, CASE_AUDIT)})
      INSERT INTO audit_events (tenant_id, actor, credential, action, target)
      SELECT ${t}, 'system:test', 'system', CASE WHEN i % 2 = 0 THEN 'case.update' ELSE 'case.assess' END, 'case:' || c.id FROM c, generate_series(1, ${N}) i`,
  },
  {
    url: `/artifacts/${ARTIFACT_COMPONENTS}/components`,
    route: '/artifacts/{id}/components',
    key: 'components',
    counts: true,
    seed: (t) => sql`WITH a AS (${newArtifact(t, ARTIFACT_COMPONENTS, 'pg-components', '7')}), s AS (
        INSERT INTO artifact_sboms (artifact_id, tenant_id, format, content_type, bytes, digest, created_at)
        SELECT a.id, ${t}, 'cyclonedx', 'application/vnd.cyclonedx+json', convert_to('{}', 'UTF8'), 'sha256:' || repeat('0', 64), now() FROM a RETURNING artifact_id
      )
      INSERT INTO sbom_components (tenant_id, artifact_id, ordinal, purl, package_key, ecosystem, name, version)
      SELECT ${t}, s.artifact_id, i, 'pkg:npm/pg-' || i || '@1.0.0', 'npm|pg-' || i, 'npm', 'pg-' || i, '1.0.0' FROM s, generate_series(1, ${N}) i`,
  },
  {
    url: `/artifacts/${ARTIFACT_FINDINGS}/findings`,
    route: '/artifacts/{id}/findings',
    key: 'findings',
    counts: true,
    seed: (t) => sql`WITH a AS (${newArtifact(t, ARTIFACT_FINDINGS, 'pg-findings', '8')}) ${newFindings(t, '1')}`,
  },
  {
    url: '/findings',
    key: 'findings',
    counts: true,
    seed: (t) => sql`WITH a AS (${newArtifact(t, '00000000-0000-4000-8000-00000000c005', 'pg-all-findings', '9')}) ${newFindings(t, '2')}`,
  },
  {
    url: '/devices/pg-vuln-dev/findings',
    route: '/devices/{name}/findings',
    key: 'findings',
    counts: true,
    // the device runs the artifact (the fleet index a receipt fills) and the findings are open
    seed: (t) => sql`WITH a AS (${newArtifact(t, '00000000-0000-4000-8000-00000000c004', 'pg-device-findings', 'a')}), d AS (
        INSERT INTO devices (tenant_id, name, status, profile) VALUES (${t}, 'pg-vuln-dev', 'online', 'linux-arm64') RETURNING name
      ), s AS (
        INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, observed_at)
        SELECT ${t}, d.name, 'app', 'sha256:' || repeat('a', 64), 'receipt', gen_random_uuid(), now() FROM d RETURNING device_name
      ) ${newFindings(t, '3')}`,
  },
  {
    url: `/artifacts/${ARTIFACT_VEX}/vex`,
    route: '/artifacts/{id}/vex',
    key: 'statements',
    counts: true,
    seed: (t) => sql`WITH a AS (${newArtifact(t, ARTIFACT_VEX, 'pg-vex', 'b')})
      INSERT INTO vex_statements (tenant_id, artifact_id, format, document_digest, vuln_id, status, statement_at, recorded_at, actor)
      SELECT ${t}, a.id, 'openvex', 'sha256:' || repeat('5', 64), 'CVE-2099-4' || lpad(i::text, 4, '0'), 'under_investigation', now() - i * interval '1 second', now(), 'system:test'
      FROM a, generate_series(1, ${N}) i`,
  },
  {
    url: '/vuln-analysis/runs',
    key: 'runs',
    counts: true,
    seed: (t) => sql`INSERT INTO vuln_analysis_runs (tenant_id, reason, state, created_at, started_at, completed_at)
      SELECT ${t}, 'pg', 'completed', now() - i * interval '1 second', now() - i * interval '1 second', now() FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/vuln-feeds/imports',
    key: 'imports',
    counts: true,
    seed: (t) => sql`INSERT INTO vuln_imports (kind, source, digest, state, entries_total, tenant_id, actor, started_at, updated_at, completed_at)
      SELECT 'osv', 'pg', 'sha256:pg-import-' || i, 'completed', 0, ${t}, 'system:test', now() - i * interval '1 second', now(), now() FROM generate_series(1, ${N}) i`,
  },
  {
    url: '/vulnerabilities/CVE-2099-5000/exposure',
    route: '/vulnerabilities/{id}/exposure',
    key: 'devices',
    counts: true,
    // one record of the vulnerability, a finding of it on an artifact, and N devices running that artifact
    seed: (t) => sql`WITH a AS (${newArtifact(t, '00000000-0000-4000-8000-00000000c006', 'pg-exposure', 'c')}), adv AS (
        INSERT INTO vuln_advisories (id, vuln_key, aliases, modified, severity, severity_source, affected, updated_at)
        VALUES ('GHSA-pg-exposure', 'CVE-2099-5000', ARRAY['CVE-2099-5000'], now(), 'high', 'database', '[]', now()) RETURNING id, vuln_key
      ), ids AS (
        INSERT INTO vuln_ids (id, advisory_id, vuln_key) SELECT x.id, adv.id, adv.vuln_key FROM adv, (VALUES ('GHSA-pg-exposure'), ('CVE-2099-5000')) x(id) RETURNING id
      ), f AS (
        INSERT INTO vuln_findings (tenant_id, artifact_id, vuln_key, component_purl, component_name, component_version, ecosystem, advisory_ids, aliases,
          severity, severity_rank, severity_source, fixed_versions, matched_by, first_seen_at, updated_at)
        SELECT ${t}, a.id, 'CVE-2099-5000', 'pkg:npm/pg' || x.n || '@1.0.0', 'pg' || x.n, '1.0.0', 'npm', ARRAY['GHSA-pg-exposure'], ARRAY['CVE-2099-5000', 'GHSA-pg-exposure'],
          'high', 3, 'database', x.fixed, '[]', now(), now()
        -- fixed-in versions none, one and two: the artifact's union of them is still one list
        FROM a, (VALUES (1, '{}'::text[]), (2, ARRAY['1.0.1']), (3, ARRAY['1.0.1', '2.0.0'])) x(n, fixed) RETURNING id
      ), d AS (
        INSERT INTO devices (tenant_id, name, status, profile) SELECT ${t}, 'pg-exposed-' || lpad(i::text, 4, '0'), 'online', 'linux-arm64' FROM generate_series(1, ${N}) i
        RETURNING name
      )
      INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, observed_at)
      SELECT ${t}, d.name, 'app', 'sha256:' || repeat('c', 64), 'receipt', gen_random_uuid(), now() FROM d`,
  },
];

describe.each(availableDrivers())('spec §8 pagination of every list on %s', (driver) => {
  let t: TestApp;
  let admin: { cookie: string };
  const get = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: admin });
    expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).toBe(200);
    return res.json<Record<string, unknown> & { total: number; limit: number; offset: number }>();
  };
  const withQuery = (url: string, q: string) => `${url}${url.includes('?') ? '&' : '?'}${q}`;

  beforeAll(async () => {
    t = await createTestApp(driver);
    admin = await t.loginAs('admin');
    for (const row of ROWS) await row.seed(t.tenantId).execute(t.testStore.store.db);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it.each(ROWS)('$url: default limit 50, offset 0, total of the whole set', async ({ url, key }) => {
    const body = await get(url);
    expect(body.limit).toBe(50);
    expect(body.offset).toBe(0);
    expect(body.total).toBeGreaterThanOrEqual(N);
    expect(body[key]).toHaveLength(50);
  });

  it.each(ROWS)('$url: limit above 200 is clamped to 200', async ({ url, key }) => {
    const body = await get(withQuery(url, 'limit=1000'));
    expect(body.limit).toBe(200);
    expect(body[key]).toHaveLength(200);
  });

  it.each(ROWS)('$url: offset is echoed and skips exactly that many items', async ({ url, key }) => {
    const first = await get(withQuery(url, 'limit=20'));
    const later = await get(withQuery(url, 'limit=10&offset=7'));
    expect(later.limit).toBe(10);
    expect(later.offset).toBe(7);
    expect(later.total).toBe(first.total);
    expect(later[key]).toEqual((first[key] as unknown[]).slice(7, 17));
    const past = await get(withQuery(url, `offset=${first.total}`));
    expect(past.offset).toBe(first.total);
    expect(past[key]).toEqual([]);
  });

  it.each(ROWS.filter((r) => r.counts))('$url: counts is an object of integers', async ({ url }) => {
    const { counts } = await get(url);
    expect(counts).toBeTypeOf('object');
    expect(counts).not.toBeNull();
    expect(Array.isArray(counts)).toBe(false);
    const values = Object.values(counts as Record<string, unknown>);
    expect(values.length).toBeGreaterThan(0);
    for (const v of values) expect(Number.isInteger(v)).toBe(true);
  });

  it('the table names every paginated list route of the API (from the OpenAPI document)', async () => {
    const doc = (await get('/openapi.json')) as unknown as OpenApi;
    const lists: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      const op = ops.get;
      if (op === undefined) continue;
      const query = new Set(op.parameters.filter((p) => p.in === 'query').map((p) => p.name));
      const body = op.responses['200']?.content?.['application/json']?.schema?.properties ?? {};
      if (query.has('limit') && query.has('offset') && 'total' in body && 'limit' in body && 'offset' in body) lists.push(path.replace(/^\/api\/v1/, ''));
    }
    const covered = [...new Set(ROWS.map((r) => r.route ?? r.url.replace('/devices/pg-history/history', '/devices/{name}/history')))];
    // a new list route needs a row in ROWS above
    expect(lists.sort()).toEqual(covered.sort());
  });
});

interface OpenApi {
  paths: Record<
    string,
    {
      get?: {
        parameters: { name: string; in: string }[];
        responses: Record<string, { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }>;
      };
    }
  >;
}
