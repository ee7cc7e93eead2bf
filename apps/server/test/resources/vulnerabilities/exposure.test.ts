/**
 * End to end over the API: inventories attached first, feeds imported later (a CVE published
 * "today" lights up artifacts published before, through the leased re-analysis job);
 * hand-verified matches per ecosystem (npm, PyPI, Debian, Alpine, Go, Maven, crates.io,
 * generic purl) including tricky versions; aliases merged; severity from the record or
 * computed from CVSS; KEV marks known exploited and, with devices running the artifact,
 * raises the Article 14 signal; exposure from what devices run (accepted receipts, legacy
 * status); VEX history; the artifact list's severity filter.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVulnAnalysis } from '../../../src/jobs/vuln-analysis.js';
import { acceptReceipt } from '../../../src/resources/release-receipts/commands.js';
import { reportLegacyStatus } from '../../../src/resources/rollouts/commands.js';
import { deviceActor, runUnitOfWork } from '../../../src/resources/unit-of-work.js';
import { envelopeBytes, signReceipt, type PrivateKey, type ReceiptPayload } from '@svc/release-core';
import { availableDrivers } from '../../helpers/store.js';
import { cyclonedx, kevCatalog, osvRecord, osvZip } from '../../helpers/feeds.js';
import { createReleaseFixture, deviceIdentity, newAuthorizer, releasePayload, sign, type ReleaseFixture } from '../../fixtures/release-flow.js';

const APP_V1 = [
  'pkg:npm/lodash@4.17.20', // SEMVER fixed 4.17.21: affected
  'pkg:npm/%40acme/widget@2.0.0-beta.1', // prerelease of the fix: affected
  'pkg:pypi/Django_REST@3.2.post1', // PEP 440: 3.2.post1 < 3.2.1: affected (name normalized)
  'pkg:pypi/requests@2.31.0.dev1', // dev release of the fix: affected
  'pkg:deb/debian/libssl3@3.0.11-1~deb12u1?distro=debian-12&upstream=openssl', // tilde before deb12u2: affected (source name)
  'pkg:deb/debian/libfoo@1:1.0-1?distro=debian-12&upstream=foo', // epoch 1 beats the fix 2.0-1: NOT affected
  'pkg:deb/debian/libbar@1.0-1?distro=debian-11&upstream=bar', // record is for Debian:12 only: NOT affected
  'pkg:apk/alpine/busybox@1.36.1-r2?distro=alpine-3.19.1', // r2 < r15: affected
  'pkg:golang/golang.org/x/net@v0.17.0', // fixed 0.23.0: affected
  'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1', // [2.0-beta9, 2.15.0): affected
  'pkg:cargo/smallvec@1.6.0', // introduced 1.6.0 fixed 1.6.1: affected
  'pkg:generic/zlib@1.2.11', // versions list through the record's purl: affected
];
const APP_V2 = ['pkg:npm/lodash@4.17.21', 'pkg:maven/org.apache.logging.log4j/log4j-core@2.17.1'];

const range = (type: 'SEMVER' | 'ECOSYSTEM', ...events: Record<string, string>[]) => [{ type, events }];
const FEED = [
  osvRecord({
    id: 'GHSA-35jh-r3h4-6jhm',
    aliases: ['CVE-2021-23337'],
    affected: [{ ecosystem: 'npm', name: 'lodash', ranges: range('SEMVER', { introduced: '0' }, { fixed: '4.17.21' }) }],
    severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' }],
  }),
  osvRecord({
    id: 'GHSA-wwww-wwww-wwww',
    affected: [{ ecosystem: 'npm', name: '@acme/widget', ranges: range('SEMVER', { introduced: '0' }, { fixed: '2.0.0' }) }],
    severity: [{ type: 'CVSS_V4', score: 'CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:L/VI:N/VA:N/SC:N/SI:N/SA:N' }],
  }),
  osvRecord({
    id: 'PYSEC-2024-1',
    aliases: ['CVE-2024-3001'],
    affected: [{ ecosystem: 'PyPI', name: 'django-rest', ranges: range('ECOSYSTEM', { introduced: '0' }, { fixed: '3.2.1' }) }],
    database_specific: { severity: 'MODERATE' },
  }),
  osvRecord({
    id: 'PYSEC-2024-2',
    affected: [{ ecosystem: 'PyPI', name: 'requests', ranges: range('ECOSYSTEM', { introduced: '2.0' }, { fixed: '2.31.0' }) }],
    database_specific: { severity: 'LOW' },
  }),
  osvRecord({
    id: 'DSA-5532-1',
    aliases: ['CVE-2023-5363'],
    affected: [{ ecosystem: 'Debian:12', name: 'openssl', ranges: range('ECOSYSTEM', { introduced: '0' }, { fixed: '3.0.11-1~deb12u2' }) }],
    database_specific: { severity: 'high' },
  }),
  osvRecord({
    id: 'DSA-9999-1',
    affected: [
      { ecosystem: 'Debian:12', name: 'foo', ranges: range('ECOSYSTEM', { introduced: '0' }, { fixed: '2.0-1' }) },
      { ecosystem: 'Debian:12', name: 'bar', ranges: range('ECOSYSTEM', { introduced: '0' }, { fixed: '2.0-1' }) },
    ],
  }),
  osvRecord({
    id: 'ALPINE-CVE-2023-42363',
    aliases: ['CVE-2023-42363'],
    affected: [{ ecosystem: 'Alpine:v3.19', name: 'busybox', ranges: range('ECOSYSTEM', { introduced: '0' }, { fixed: '1.36.1-r15' }) }],
  }),
  osvRecord({
    id: 'GO-2023-2102',
    aliases: ['CVE-2023-39325'],
    affected: [{ ecosystem: 'Go', name: 'golang.org/x/net', ranges: range('SEMVER', { introduced: '0' }, { fixed: '0.23.0' }) }],
    database_specific: { severity: 'HIGH' },
  }),
  osvRecord({
    id: 'GHSA-jfh8-c2jp-5v3q',
    aliases: ['CVE-2021-44228'],
    affected: [
      { ecosystem: 'Maven', name: 'org.apache.logging.log4j:log4j-core', ranges: range('ECOSYSTEM', { introduced: '2.0-beta9' }, { fixed: '2.15.0' }) },
    ],
    database_specific: { severity: 'CRITICAL' },
  }),
  osvRecord({
    id: 'RUSTSEC-2021-0003',
    aliases: ['CVE-2021-25900'],
    affected: [{ ecosystem: 'crates.io', name: 'smallvec', ranges: range('SEMVER', { introduced: '1.6.0' }, { fixed: '1.6.1' }) }],
  }),
  osvRecord({
    id: 'OSV-2022-1',
    affected: [{ ecosystem: 'OSS-Fuzz', name: 'zlib', purl: 'pkg:generic/zlib', versions: ['1.2.11', '1.2.12'] }],
    database_specific: { severity: 'medium' },
  }),
];
// a second source for log4j: same CVE, merged into the same vulnerability
const LOG4J_VENDOR = osvRecord({
  id: 'x_vendor-log4j',
  aliases: ['CVE-2021-44228'],
  affected: [{ ecosystem: 'Maven', name: 'org.apache.logging.log4j:log4j-core', versions: ['2.14.1'] }],
  severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:C/C:H/I:H/A:H' }],
});

describe.each(availableDrivers())('vulnerability intelligence end to end on %s', (driver) => {
  let f: ReleaseFixture;
  let tenant: string;
  let v1: any;
  let v2: any;
  let ids: Record<string, { certDer: Uint8Array; key: PrivateKey }>;
  const db = () => f.t.testStore.store.db;
  const analyze = () => runVulnAnalysis(db(), () => f.t.clock.now(), { owner: 'test' });
  const attach = (id: string, purls: string[]) =>
    f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: cyclonedx(purls),
    });
  const postZip = (zip: Buffer) =>
    f.t.app.inject({ method: 'POST', url: '/api/v1/vuln-feeds/osv?source=test', headers: { ...f.admin, 'content-type': 'application/zip' }, payload: zip });

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    tenant = f.t.tenantId;
    ids = {};
    for (const d of ['edge-1', 'edge-2', 'edge-3', 'edge-4']) {
      await f.device(d);
      ids[d] = await deviceIdentity(f, d);
    }
    v1 = (await f.upload({ name: 'app', version: '1.0.0', kind: 'config', bytes: 'app one' })).body;
    v2 = (await f.upload({ name: 'app', version: '2.0.0', kind: 'config', bytes: 'app two' })).body;
    expect((await attach(v1.id, APP_V1)).statusCode).toBe(200);
    expect((await attach(v2.id, APP_V2)).statusCode).toBe(200);
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('indexes components by package URL (name, version, ecosystem, licenses, hashes)', async () => {
    const c = (await f.api('GET', `/api/v1/artifacts/${v1.id}/components?limit=200`)).body;
    expect(c.total).toBe(APP_V1.length);
    expect(c.components.find((x: any) => x.purl === 'pkg:pypi/django-rest@3.2.post1')).toMatchObject({
      package_key: 'PyPI|django-rest',
      ecosystem: 'PyPI',
      version: '3.2.post1',
      licenses: ['MIT'],
      hashes: { 'SHA-256': 'a'.repeat(64) },
    });
    expect(c.components.find((x: any) => x.name === 'openssl')).toMatchObject({ package_key: 'Debian|openssl', release: '12', version: '3.0.11-1~deb12u1' });
    expect(c.counts).toMatchObject({ npm: 2, PyPI: 2, Debian: 3, Alpine: 1, Go: 1, Maven: 1, 'crates.io': 1, other: 1 });
    expect((await f.api('GET', `/api/v1/artifacts/${v1.id}/components?ecosystem=Debian`)).body.total).toBe(3);
  });

  it('a feed imported after the SBOMs lights the artifacts up through the re-analysis job, with progress in the API', async () => {
    expect((await f.api('GET', '/api/v1/findings')).body.total).toBe(0);
    const imp = await postZip(osvZip(FEED));
    expect(imp.statusCode, imp.body).toBe(201);
    const queued = (await f.api('GET', '/api/v1/vuln-analysis/runs')).body;
    expect(queued.runs[0]).toMatchObject({ state: 'queued', artifacts_done: 0 });
    await analyze();
    const done = (await f.api('GET', '/api/v1/vuln-analysis/runs')).body;
    expect(done.runs[0]).toMatchObject({ state: 'completed', artifacts_total: 2, artifacts_done: 2, findings_added: 10 });
    expect(done.counts).toMatchObject({ completed: 1, queued: 0 });
    const audit = await sql<{ actor: string }>`SELECT actor FROM audit_events WHERE action = 'vuln-analysis.complete'`.execute(db());
    expect(audit.rows).toEqual([{ actor: 'system:vuln-analysis' }]);
  });

  it('matches per ecosystem exactly as hand-verified, recording how', async () => {
    const all = (await f.api('GET', `/api/v1/artifacts/${v1.id}/findings?limit=200`)).body;
    const byPurl = Object.fromEntries(all.findings.map((x: any) => [x.component.purl, x]));
    expect(Object.keys(byPurl).sort()).toEqual([
      'pkg:apk/alpine/busybox@1.36.1-r2?distro=alpine-3.19.1',
      'pkg:cargo/smallvec@1.6.0',
      'pkg:deb/debian/libssl3@3.0.11-1~deb12u1?distro=debian-12&upstream=openssl',
      'pkg:generic/zlib@1.2.11',
      'pkg:golang/golang.org/x/net@v0.17.0',
      'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1',
      'pkg:npm/%40acme/widget@2.0.0-beta.1',
      'pkg:npm/lodash@4.17.20',
      'pkg:pypi/django-rest@3.2.post1',
      'pkg:pypi/requests@2.31.0.dev1',
    ]);
    expect(byPurl['pkg:deb/debian/libssl3@3.0.11-1~deb12u1?distro=debian-12&upstream=openssl'].matched_by).toEqual([
      {
        advisory: 'DSA-5532-1',
        ecosystem: 'Debian',
        release: '12',
        how: 'range',
        range_type: 'ECOSYSTEM',
        ordering: 'dpkg',
        introduced: '0',
        fixed: '3.0.11-1~deb12u2',
        last_affected: null,
      },
    ]);
    expect(byPurl['pkg:generic/zlib@1.2.11'].matched_by[0]).toMatchObject({ how: 'versions', version: '1.2.11' });
    expect(byPurl['pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1'].matched_by[0]).toMatchObject({
      ordering: 'maven',
      introduced: '2.0-beta9',
      fixed: '2.15.0',
    });
    // nothing for app 2.0.0 (fixed versions)
    expect((await f.api('GET', `/api/v1/artifacts/${v2.id}/findings`)).body.total).toBe(0);
  });

  it('severity: the record rating first, else computed from CVSS v4 or v3.1; aliases merged by CVE', async () => {
    const one = async (vuln: string) => (await f.api('GET', `/api/v1/findings?vulnerability=${vuln}`)).body.findings[0];
    expect(await one('GHSA-35jh-r3h4-6jhm')).toMatchObject({
      vulnerability: 'CVE-2021-23337',
      severity: 'critical',
      severity_source: 'cvss_v3',
      cvss_score: 9.8,
    });
    expect(await one('GHSA-wwww-wwww-wwww')).toMatchObject({ severity: 'medium', severity_source: 'cvss_v4', cvss_score: 6.9 });
    expect(await one('CVE-2024-3001')).toMatchObject({ severity: 'medium', severity_source: 'database' });
    expect(await one('ALPINE-CVE-2023-42363')).toMatchObject({ severity: 'unknown', severity_source: 'none' });

    // a second record for the same CVE from another source: one finding, both advisories
    expect((await postZip(osvZip([LOG4J_VENDOR]))).statusCode).toBe(201);
    await analyze();
    const log4j = (await f.api('GET', '/api/v1/findings?vulnerability=x_vendor-log4j')).body;
    expect(log4j.total).toBe(1);
    expect(log4j.findings[0]).toMatchObject({
      vulnerability: 'CVE-2021-44228',
      advisories: ['GHSA-jfh8-c2jp-5v3q', 'x_vendor-log4j'],
      severity: 'critical',
      severity_source: 'database',
    });
    expect(log4j.findings[0].matched_by.map((m: any) => m.how).sort()).toEqual(['range', 'versions']);
    const vuln = (await f.api('GET', '/api/v1/vulnerabilities/GHSA-jfh8-c2jp-5v3q')).body;
    expect(vuln).toMatchObject({ id: 'CVE-2021-44228', aliases: ['CVE-2021-44228', 'GHSA-jfh8-c2jp-5v3q', 'x_vendor-log4j'], known_exploited: false });
  });

  it('lists with filters and counts by severity (filtered set); the artifact list filters by open findings at or above a severity', async () => {
    const all = (await f.api('GET', '/api/v1/findings')).body;
    expect(all.total).toBe(10);
    expect(all.counts).toEqual({ critical: 2, high: 2, medium: 3, low: 1, none: 0, unknown: 2 });
    const high = (await f.api('GET', '/api/v1/findings?severity=high')).body;
    expect(high.total).toBe(4);
    expect(high.counts).toMatchObject({ critical: 2, high: 2, medium: 0 });
    expect((await f.api('GET', '/api/v1/findings?severity=bogus')).status).toBe(400);
    expect((await f.api('GET', '/api/v1/artifacts?severity=high')).body.artifacts.map((a: any) => a.version)).toEqual(['1.0.0']);
    expect((await f.api('GET', '/api/v1/artifacts?severity=critical')).body.total).toBe(1);
  });

  it('exposure follows what devices run: accepted receipts (software-key) and legacy status; groups; the release that fixes it', async () => {
    const group = (await f.api('POST', '/api/v1/groups', { name: 'fleet', members: ['edge-1', 'edge-2', 'edge-3'] })).body;
    await f.api('POST', '/api/v1/groups', { name: 'other', members: ['edge-4'] });
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
    const rel1 = (
      await f.api('POST', '/api/v1/releases', {
        envelope: sign(releasePayload({ tenant, version: '1.0.0', artifacts: [v1], group }), auth.key),
        expected_product: 'edge-gateway',
      })
    ).body;
    const start = (await f.api('POST', '/api/v1/rollouts', { release_id: rel1.id })).body;
    expect(start.kind, JSON.stringify(start)).toBe('signed');
    for (const d of ['edge-1', 'edge-2']) {
      const p = {
        tenant,
        device: { name: d, certificate: Buffer.from(ids[d]!.certDer).toString('base64') },
        release: { product: rel1.product, version: rel1.version, payload_digest: rel1.payload_digest, envelope_digest: rel1.envelope_digest },
        rollout: start.rollouts[0].rollout_id,
        candidate_digest: v1.digest,
        previous_digest: null,
        resulting_digest: v1.digest,
        activation: 'activated',
        health: 'healthy',
        timestamp: '2026-06-01T00:00:00Z',
      } as ReceiptPayload;
      await runUnitOfWork(db(), { tenant, actor: deviceActor(d), now: f.t.clock.now() }, (uow) =>
        acceptReceipt(uow, { deviceName: d, connectionCertificateDer: ids[d]!.certDer, envelopeBytes: envelopeBytes(signReceipt(p, ids[d]!.key)) }),
      );
    }
    // edge-4 only reports legacy status for app 1.0.0
    const other = (await f.api('GET', '/api/v1/groups')).body.groups.find((g: any) => g.name === 'other');
    const legacy = (await f.api('POST', '/api/v1/rollouts', { artifact_id: v1.id, group_id: other.id })).body;
    await runUnitOfWork(db(), { tenant, actor: deviceActor('edge-4'), now: f.t.clock.now() }, (uow) =>
      reportLegacyStatus(uow, { deviceName: 'edge-4', rolloutId: legacy.id, status: 'installed' }),
    );

    const exp = (await f.api('GET', '/api/v1/vulnerabilities/CVE-2021-44228/exposure')).body;
    expect(exp).toMatchObject({ vulnerability: 'CVE-2021-44228', total: 3, counts: { artifacts: 1, open_artifacts: 1, releases: 1, devices: 3, groups: 2 } });
    expect(exp.artifacts[0]).toMatchObject({ id: v1.id, devices: 3, fixed_versions: ['2.15.0'] });
    expect(exp.devices).toEqual([
      { name: 'edge-1', components: ['app'], source: 'receipt' },
      { name: 'edge-2', components: ['app'], source: 'receipt' },
      { name: 'edge-4', components: ['app'], source: 'legacy' },
    ]);
    expect(exp.groups.map((g: any) => [g.name, g.devices])).toEqual([
      ['fleet', 2],
      ['other', 1],
    ]);
    expect(exp.releases).toEqual([{ id: rel1.id, product: 'edge-gateway', version: '1.0.0', artifacts: [v1.id] }]);
    expect(exp.fixed_by).toEqual([]);
    // a newer release of the product with the fixed artifact
    f.t.clock.advance(1000);
    const rel2 = (
      await f.api('POST', '/api/v1/releases', {
        envelope: sign(releasePayload({ tenant, version: '2.0.0', artifacts: [v2], group }), auth.key),
        expected_product: 'edge-gateway',
      })
    ).body;
    const exp2 = (await f.api('GET', '/api/v1/vulnerabilities/CVE-2021-44228/exposure?limit=1&offset=1')).body;
    expect(exp2.fixed_by).toEqual([{ product: 'edge-gateway', release_id: rel2.id, version: '2.0.0', created_at: rel2.created_at }]);
    expect(exp2).toMatchObject({ total: 3, limit: 1, offset: 1, devices: [{ name: 'edge-2' }] });

    // a device's open findings; a device that runs nothing vulnerable has none
    const d1 = (await f.api('GET', '/api/v1/devices/edge-1/findings')).body;
    expect(d1.total).toBe(10);
    expect((await f.api('GET', '/api/v1/devices/edge-3/findings')).body.total).toBe(0);
    expect((await f.api('GET', '/api/v1/devices/ghost/findings')).status).toBe(404);
    expect((await f.api('GET', '/api/v1/findings?product=edge-gateway')).body.total).toBe(10);
    expect((await f.api('GET', '/api/v1/findings?product=nothing')).body.total).toBe(0);
  });

  it('KEV marks findings known exploited and, as devices run them, raises the Article 14 signal once (audit row + field)', async () => {
    const kev = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/kev',
      headers: f.admin,
      payload: kevCatalog([{ cve: 'CVE-2021-44228', dateAdded: '2021-12-10' }]),
    });
    expect(kev.statusCode, kev.body).toBe(201);
    await analyze();
    const first = (await f.api('GET', '/api/v1/findings?limit=1')).body.findings[0];
    expect(first).toMatchObject({ vulnerability: 'CVE-2021-44228', known_exploited: true, kev_date_added: '2021-12-10' });
    expect(first.known_exploited_in_fleet_at).not.toBeNull();
    const signals = await sql<{
      target: string;
      detail: any;
      actor: string;
    }>`SELECT target, detail, actor FROM audit_events WHERE action = 'vuln-finding.known-exploited'`.execute(db());
    expect(signals.rows).toEqual([
      {
        target: `vuln-finding:${first.id}`,
        actor: 'system:vuln-analysis',
        detail: { vulnerability: 'CVE-2021-44228', artifact_id: v1.id, component: 'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1', devices: 3 },
      },
    ]);
    expect((await f.api('GET', '/api/v1/findings?known_exploited=true')).body.total).toBe(1);
    // another run changes nothing: the signal is raised once
    await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/kev',
      headers: f.admin,
      payload: kevCatalog([{ cve: 'CVE-2021-44228', dateAdded: '2021-12-10' }, { cve: 'CVE-2000-0001' }], {
        version: '2024.06.09',
        released: '2024-06-09T00:00:00.000Z',
      }),
    });
    await analyze();
    expect(
      Number((await sql<{ n: string }>`SELECT count(*) AS n FROM audit_events WHERE action = 'vuln-finding.known-exploited'`.execute(db())).rows[0]!.n),
    ).toBe(1);
  });

  it('VEX sets a finding status with history: the latest statement by its time wins, an older one is kept but does not override', async () => {
    const vex = (doc: unknown, type: string) =>
      f.t.app.inject({ method: 'POST', url: `/api/v1/artifacts/${v1.id}/vex`, headers: { ...f.admin, 'content-type': type }, payload: JSON.stringify(doc) });
    const openvex = (status: string, timestamp: string, extra: Record<string, unknown> = {}) => ({
      '@context': 'https://openvex.dev/ns/v0.2.0',
      '@id': `https://example.com/vex/${timestamp}`,
      author: 'Security Team',
      timestamp,
      version: 1,
      statements: [
        {
          vulnerability: { name: 'CVE-2021-44228' },
          products: [{ '@id': 'pkg:oci/app@sha256:abc', subcomponents: [{ '@id': 'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1' }] }],
          status,
          ...extra,
        },
      ],
    });
    const r1 = await vex(openvex('not_affected', '2024-03-01T00:00:00Z', { justification: 'vulnerable_code_not_in_execute_path' }), 'application/openvex+json');
    expect(r1.statusCode, r1.body).toBe(201);
    expect(JSON.parse(r1.body)).toMatchObject({ format: 'openvex', findings_applied: 1 });
    const f1 = (await f.api('GET', '/api/v1/findings?vulnerability=CVE-2021-44228')).body.findings[0];
    expect(f1).toMatchObject({ vex: { status: 'not_affected', justification: 'vulnerable_code_not_in_execute_path' }, open: false });
    // not_affected closes it: no longer in the high list of artifacts nor in the exposure
    expect((await f.api('GET', '/api/v1/artifacts?severity=critical')).body.total).toBe(1); // lodash stays critical and open
    expect((await f.api('GET', '/api/v1/vulnerabilities/CVE-2021-44228/exposure')).body).toMatchObject({ total: 0, counts: { open_artifacts: 0 } });

    // an OLDER statement is recorded, but the newer one stays in force
    const r2 = await vex(openvex('affected', '2024-01-01T00:00:00Z', { action_statement: 'upgrade' }), 'application/openvex+json');
    expect(JSON.parse(r2.body).findings_applied).toBe(0);
    expect((await f.api('GET', '/api/v1/findings?vulnerability=CVE-2021-44228')).body.findings[0].vex.status).toBe('not_affected');

    // a newer CycloneDX VEX: in triage again
    const cdx = {
      bomFormat: 'CycloneDX',
      specVersion: '1.6',
      version: 1,
      components: [{ type: 'library', 'bom-ref': 'log4j', name: 'log4j-core', purl: 'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1' }],
      vulnerabilities: [{ id: 'CVE-2021-44228', analysis: { state: 'in_triage', lastUpdated: '2024-04-01T00:00:00Z' }, affects: [{ ref: 'log4j' }] }],
    };
    const r3 = await vex(cdx, 'application/vnd.cyclonedx+json');
    expect(r3.statusCode, r3.body).toBe(201);
    expect((await f.api('GET', '/api/v1/findings?vulnerability=CVE-2021-44228')).body.findings[0]).toMatchObject({
      vex: { status: 'under_investigation' },
      open: true,
    });
    const history = (await f.api('GET', `/api/v1/artifacts/${v1.id}/vex`)).body;
    expect(history.statements.map((s: any) => [s.status, s.statement_at])).toEqual([
      ['under_investigation', '2024-04-01T00:00:00.000Z'],
      ['not_affected', '2024-03-01T00:00:00.000Z'],
      ['affected', '2024-01-01T00:00:00.000Z'],
    ]);
    expect(history.counts).toEqual({ not_affected: 1, affected: 1, fixed: 0, under_investigation: 1 });
    await expect(sql`UPDATE vex_statements SET status = 'fixed'`.execute(db())).rejects.toThrow(/append-only/);

    const bad = await vex({ ...openvex('not_affected', '2024-05-01T00:00:00Z') }, 'application/openvex+json');
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).error).toMatch(/^statements\[0\]\.(justification|impact_statement): is required$/);
    const badCdx = await vex({ ...cdx, vulnerabilities: [{ id: 'CVE-1', analysis: { state: 'maybe' } }] }, 'application/vnd.cyclonedx+json');
    expect(JSON.parse(badCdx.body).error).toMatch(/^vulnerabilities\[0\]\.analysis\.state: must be one of/);
    const viewer = await f.t.loginAs('viewer');
    expect(
      (
        await f.t.app.inject({
          method: 'POST',
          url: `/api/v1/artifacts/${v1.id}/vex`,
          headers: { ...viewer, 'content-type': 'application/openvex+json' },
          payload: '{}',
        })
      ).statusCode,
    ).toBe(403);
  });
});
