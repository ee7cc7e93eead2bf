/**
 * A small fleet whose report figures are known by construction, built through the API (and
 * the device channel's receipt command, as devices run it):
 *
 *   devices  d1..d6 active, d7 decommissioned
 *   artifacts app 1.0.0 (SBOM: lodash 4.17.20, log4j-core 2.14.1, requests 2.30.0),
 *             app 2.0.0 (SBOM: lodash 4.17.21), tool 1.0.0 (no SBOM),
 *             lib 0.1.0 (in no release; SBOM: zlib 1.2.11)
 *   feeds    OSV: lodash (critical, CVSS), log4j (critical, in KEV), requests (low), zlib (medium)
 *   VEX      requests on app 1.0.0: not_affected
 *   releases edge-gateway 1.0.0 [app 1.0.0] -> group g1 (d1, d2): device-signed receipts
 *            edge-gateway 2.0.0 [app 2.0.0] -> group g2 (d4): receipt; d3 runs app 2.0.0 from a legacy rollout
 *            sensor 1.0.0 [tool 1.0.0] -> group g3 (d5): receipt
 *   keys     two authorizer keys registered, the first revoked (one rotation)
 *   case     one open exploited-vulnerability case on edge-gateway, aware 30 hours ago
 */
import { buildReceiptPayload, envelopeBytes, signReceipt, type PrivateKey } from '@svc/release-core';
import { expect } from 'vitest';
import { runVulnAnalysis } from '../src/jobs/vuln-analysis.js';
import { acceptReceipt } from '../src/resources/release-receipts/commands.js';
import { reportLegacyStatus } from '../src/resources/rollouts/commands.js';
import { deviceActor, runUnitOfWork } from '../src/resources/unit-of-work.js';
import type { Driver } from '../src/store/open.js';
import { cyclonedx, kevCatalog, osvRecord, osvZip } from './helpers/feeds.js';
import { solidPng } from './helpers/pdf.js';
import { createPipelineFixture, deviceIdentity, newAuthorizer, releasePayload, sign, type PipelineFixture } from './pipeline-fixture.js';

export const BRANDING = { company_name: 'Acme Robotics GmbH', primary_color: '#111827', accent_color: '#7c3aed', logo: '#ff00ff' };

export const FEED = [
  osvRecord({
    id: 'GHSA-35jh-r3h4-6jhm',
    aliases: ['CVE-2021-23337'],
    affected: [{ ecosystem: 'npm', name: 'lodash', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '4.17.21' }] }] }],
    severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' }],
  }),
  osvRecord({
    id: 'GHSA-jfh8-c2jp-5v3q',
    aliases: ['CVE-2021-44228'],
    affected: [
      {
        ecosystem: 'Maven',
        name: 'org.apache.logging.log4j:log4j-core',
        ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '2.0-beta9' }, { fixed: '2.15.0' }] }],
      },
    ],
    database_specific: { severity: 'CRITICAL' },
  }),
  osvRecord({
    id: 'PYSEC-2024-2',
    affected: [{ ecosystem: 'PyPI', name: 'requests', ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '2.0' }, { fixed: '2.31.0' }] }] }],
    database_specific: { severity: 'LOW' },
  }),
  osvRecord({
    id: 'OSV-2022-1',
    affected: [{ ecosystem: 'OSS-Fuzz', name: 'zlib', purl: 'pkg:generic/zlib', versions: ['1.2.11'] }],
    database_specific: { severity: 'medium' },
  }),
];

export interface ReportsWorld {
  f: PipelineFixture;
  tenant: string;
  app1: any;
  app2: any;
  tool: any;
  lib: any;
  rel1: any;
  rel2: any;
  sensor: any;
  caseId: string;
}

export const db = (f: PipelineFixture) => f.t.testStore.store.db;

/** Builds the fleet above on a fresh fixture (with the clock where tests can move it). */
export async function buildReportsWorld(driver: Driver): Promise<ReportsWorld> {
  const f = await createPipelineFixture(driver);
  const tenant = f.t.tenantId;
  const ok = async (method: string, url: string, payload?: unknown, status = [200, 201, 204]) => {
    const r = await f.api(method, url, payload);
    expect(status, `${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`).toContain(r.status);
    return r.body;
  };
  await ok('PUT', '/api/v1/admin/branding', {
    company_name: BRANDING.company_name,
    primary_color: BRANDING.primary_color,
    accent_color: BRANDING.accent_color,
    logo_data_url: `data:image/png;base64,${solidPng(60, 24, BRANDING.logo).toString('base64')}`,
  });

  const ids: Record<string, { certDer: Uint8Array; key: PrivateKey }> = {};
  for (const d of ['d1', 'd2', 'd3', 'd4', 'd5', 'd6', 'd7']) {
    await f.device(d);
    ids[d] = await deviceIdentity(f, d);
  }
  await ok('DELETE', '/api/v1/devices/d7');

  // feeds first: attaching an SBOM matches at once
  const zip = await f.t.app.inject({
    method: 'POST',
    url: '/api/v1/vuln-feeds/osv?source=osv%3Atest',
    headers: { ...f.admin, 'content-type': 'application/zip' },
    payload: osvZip(FEED),
  });
  expect(zip.statusCode, zip.body).toBe(201);
  const kev = await f.t.app.inject({
    method: 'POST',
    url: '/api/v1/vuln-feeds/kev',
    headers: f.admin,
    payload: kevCatalog([{ cve: 'CVE-2021-44228', dateAdded: '2021-12-10' }]),
  });
  expect(kev.statusCode, kev.body).toBe(201);
  await runVulnAnalysis(db(f), () => f.t.clock.now(), { owner: 'test' });

  const upload = async (name: string, version: string) => {
    const r = await f.upload({ name, version, kind: 'config', bytes: `${name} ${version}` });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body;
  };
  const attach = async (id: string, purls: string[]) => {
    const r = await f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: cyclonedx(purls),
    });
    expect(r.statusCode, r.body).toBe(200);
  };
  const app1 = await upload('app', '1.0.0');
  const app2 = await upload('app', '2.0.0');
  const tool = await upload('tool', '1.0.0');
  const lib = await upload('lib', '0.1.0');
  await attach(app1.id, ['pkg:npm/lodash@4.17.20', 'pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1', 'pkg:pypi/requests@2.30.0']);
  await attach(app2.id, ['pkg:npm/lodash@4.17.21']);
  await attach(lib.id, ['pkg:generic/zlib@1.2.11']);
  const vex = await f.t.app.inject({
    method: 'POST',
    url: `/api/v1/artifacts/${app1.id}/vex`,
    headers: { ...f.admin, 'content-type': 'application/openvex+json' },
    payload: JSON.stringify({
      '@context': 'https://openvex.dev/ns/v0.2.0',
      '@id': 'https://example.com/vex/1',
      author: 'Security Team',
      timestamp: '2024-03-01T00:00:00Z',
      version: 1,
      statements: [
        {
          vulnerability: { name: 'PYSEC-2024-2' },
          products: [{ '@id': 'pkg:oci/app', subcomponents: [{ '@id': 'pkg:pypi/requests@2.30.0' }] }],
          status: 'not_affected',
          justification: 'vulnerable_code_not_in_execute_path',
        },
      ],
    }),
  });
  expect(vex.statusCode, vex.body).toBe(201);

  const oldKey = await ok('POST', '/api/v1/authorizer-keys', { name: 'release-2025', public_key_pem: newAuthorizer().pem });
  const auth = newAuthorizer();
  await ok('POST', '/api/v1/authorizer-keys', { name: 'release-2026', public_key_pem: auth.pem });
  await ok('POST', `/api/v1/authorizer-keys/${oldKey.id}/revoke`);

  const g1 = await ok('POST', '/api/v1/groups', { name: 'g1', members: ['d1', 'd2'] });
  const g2 = await ok('POST', '/api/v1/groups', { name: 'g2', members: ['d4'] });
  const g3 = await ok('POST', '/api/v1/groups', { name: 'g3', members: ['d5'] });
  const gl = await ok('POST', '/api/v1/groups', { name: 'legacy', members: ['d3'] });
  const release = async (product: string, version: string, artifact: any, group: any) => {
    f.t.clock.advance(1000);
    return ok('POST', '/api/v1/releases', {
      envelope: sign(releasePayload({ tenant, product, version, artifacts: [artifact], group }), auth.key),
      expected_product: product,
    });
  };
  const rel1 = await release('edge-gateway', '1.0.0', app1, g1);
  const rel2 = await release('edge-gateway', '2.0.0', app2, g2);
  const sensor = await release('sensor', '1.0.0', tool, g3);

  const deploy = async (rel: any, artifact: any, devices: string[]) => {
    const start = await ok('POST', '/api/v1/rollouts', { release_id: rel.id });
    const m = start.rollouts[0];
    for (const d of devices) {
      const p = buildReceiptPayload({
        tenant,
        device: { name: d, certificateDer: ids[d]!.certDer },
        release: { product: rel.product, version: rel.version, payload_digest: rel.payload_digest, envelope_digest: rel.envelope_digest },
        transaction: { id: start.transaction_id, member_count: 1 },
        members: [
          {
            group: m.group,
            position: m.position,
            component: m.component,
            rollout: m.rollout_id,
            candidate_digest: artifact.digest,
            previous_digest: null,
            resulting_digest: artifact.digest,
            verdict: 'committed',
          },
        ],
        activation: 'activated',
        health: 'healthy',
        now: f.t.clock.now(),
      });
      await runUnitOfWork(db(f), { tenant, actor: deviceActor(d), now: f.t.clock.now() }, (uow) =>
        acceptReceipt(uow, { deviceName: d, connectionCertificateDer: ids[d]!.certDer, envelopeBytes: envelopeBytes(signReceipt(p, ids[d]!.key)) }),
      );
    }
  };
  await deploy(rel1, app1, ['d1', 'd2']);
  await deploy(rel2, app2, ['d4']);
  await deploy(sensor, tool, ['d5']);
  const legacy = await ok('POST', '/api/v1/rollouts', { artifact_id: app2.id, group_id: gl.id });
  await runUnitOfWork(db(f), { tenant, actor: deviceActor('d3'), now: f.t.clock.now() }, (uow) =>
    reportLegacyStatus(uow, { deviceName: 'd3', rolloutId: legacy.id, status: 'installed' }),
  );
  // the Article 14 signal of the known-exploited log4j finding on devices
  await runVulnAnalysis(db(f), () => f.t.clock.now(), { owner: 'test' });

  const c = await ok('POST', '/api/v1/cases', {
    kind: 'exploited_vulnerability',
    title: 'Log4Shell in the gateway app',
    owner: 'psirt@acme.example',
    products: ['edge-gateway'],
    vulnerability_ids: ['CVE-2021-44228'],
    awareness: { aware_at: new Date(f.t.clock.now().getTime() - 30 * 3600_000).toISOString(), aware_by: 'alice@acme.example', evidence: 'KEV catalog entry' },
  });
  return { f, tenant, app1, app2, tool, lib, rel1, rel2, sensor, caseId: c.id };
}
