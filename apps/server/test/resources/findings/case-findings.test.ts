/**
 * A case's linked findings and exposure from real parts: an OSV feed imported over the API,
 * SBOMs attached to published artifacts (the findings come from the matching), devices running
 * the vulnerable artifact through a rollout they report on, and groups. The case names the CVE
 * (or its GHSA alias) and shows the findings, the exposure the exposure API shows, and the
 * affected devices and groups; the case export holds the same at export time, inside the
 * signed manifest.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportLegacyStatus } from '../../../src/resources/rollouts/commands.js';
import { deviceActor, runUnitOfWork } from '../../../src/resources/unit-of-work.js';
import { createCasesFixture, type CasesFixture } from '../../fixtures/cases.js';
import { cyclonedx, osvRecord, osvZip } from '../../helpers/feeds.js';
import { availableDrivers } from '../../helpers/store.js';
import { untar } from '../../fixtures/release-flow.js';

const LODASH = osvRecord({
  id: 'GHSA-35jh-r3h4-6jhm',
  aliases: ['CVE-2021-23337'],
  affected: [{ ecosystem: 'npm', name: 'lodash', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '4.17.21' }] }] }],
  severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' }],
});
const OTHER = osvRecord({
  id: 'PYSEC-2024-9',
  affected: [{ ecosystem: 'PyPI', name: 'requests', ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '2.31.0' }] }] }],
  database_specific: { severity: 'LOW' },
});

describe.each(availableDrivers())('a case linked to findings and exposure on %s', (driver) => {
  let f: CasesFixture;
  let v1: any;
  let v2: any;
  let fleet: any;
  const sbom = (id: string, purls: string[]) =>
    f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: cyclonedx(purls),
    });

  beforeAll(async () => {
    f = await createCasesFixture(driver);
    const feed = await f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/osv?source=test',
      headers: { ...f.admin, 'content-type': 'application/zip' },
      payload: osvZip([LODASH, OTHER]),
    });
    expect(feed.statusCode, feed.body).toBe(201);
    v1 = await f.artifact('web-ui', '1.0.0');
    v2 = await f.artifact('web-ui', '2.0.0');
    // both vulnerable components in 1.0.0; 2.0.0 carries the fixed lodash
    expect((await sbom(v1.id, ['pkg:npm/lodash@4.17.20', 'pkg:pypi/requests@2.30.0'])).statusCode).toBe(200);
    expect((await sbom(v2.id, ['pkg:npm/lodash@4.17.21'])).statusCode).toBe(200);
    for (const d of ['lf-1', 'lf-2', 'lf-3']) await f.device(d);
    fleet = (await f.api('POST', '/api/v1/groups', { name: 'lf-fleet', members: ['lf-1', 'lf-2'] })).body;
    await f.api('POST', '/api/v1/groups', { name: 'lf-spare', members: ['lf-3'] });
    // lf-1 and lf-2 run 1.0.0 (they report it installed); lf-3 runs nothing
    const rollout = await f.api('POST', '/api/v1/rollouts', { artifact_id: v1.id, group_id: fleet.id });
    expect(rollout.status, JSON.stringify(rollout.body)).toBe(201);
    for (const d of ['lf-1', 'lf-2'])
      await runUnitOfWork(f.t.testStore.store.db, { tenant: f.t.tenantId, actor: deviceActor(d), now: f.t.clock.now() }, (uow) =>
        reportLegacyStatus(uow, { deviceName: d, rolloutId: rollout.body.id, status: 'installed' }),
      );
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('lists the findings naming the CVE, its exposure as the exposure API shows it, and the affected devices and groups', async () => {
    const c = await f.openCase({ vulnerability_ids: ['CVE-2021-23337'], artifact_ids: [v2.id], products: ['web-ui'] });
    const res = await f.api('GET', `/api/v1/cases/${c.id}/findings`);
    expect(res.status).toBe(200);
    const e = res.body;
    expect(e.vulnerability_ids).toEqual(['CVE-2021-23337']);
    expect(e.vulnerabilities).toEqual([{ id: 'CVE-2021-23337', vulnerability: 'CVE-2021-23337', known_exploited: false }]);
    expect(e.findings_total).toBe(1);
    expect(e.findings).toHaveLength(1);
    expect(e.findings[0]).toMatchObject({
      vulnerability: 'CVE-2021-23337',
      aliases: ['CVE-2021-23337', 'GHSA-35jh-r3h4-6jhm'],
      severity: 'critical',
      artifact: { id: v1.id, name: 'web-ui', version: '1.0.0', digest: v1.digest },
      component: { purl: 'pkg:npm/lodash@4.17.20' },
      fixed_versions: ['4.17.21'],
      open: true,
    });
    // the finding is the one the findings API lists
    const listed = (await f.api('GET', '/api/v1/findings?vulnerability=GHSA-35jh-r3h4-6jhm')).body.findings;
    expect(e.findings).toEqual(listed);

    const api = (await f.api('GET', '/api/v1/vulnerabilities/CVE-2021-23337/exposure')).body;
    expect(e.exposure).toEqual([
      { vulnerability: 'CVE-2021-23337', artifacts: api.artifacts, releases: api.releases, fixed_by: api.fixed_by, groups: api.groups, devices: api.total },
    ]);
    expect(e.exposure[0].artifacts).toMatchObject([{ id: v1.id, devices: 2, open_findings: 1 }]);
    expect(e.exposure[0].devices).toBe(2);
    // the case's own artifact (the fixed one) runs nowhere yet
    expect(e.artifacts).toEqual([{ id: v2.id, name: 'web-ui', version: '2.0.0', digest: v2.digest, devices: 0 }]);
    expect(e.affected).toEqual({
      devices: [
        { name: 'lf-1', components: ['web-ui'], source: 'legacy' },
        { name: 'lf-2', components: ['web-ui'], source: 'legacy' },
      ],
      devices_total: 2,
      groups: [{ id: fleet.id, name: 'lf-fleet', devices: 2 }],
    });
  });

  it('finds the same through an alias, and nothing for an id no feed names', async () => {
    const byAlias = await f.openCase({ vulnerability_ids: ['GHSA-35JH-R3H4-6JHM'] });
    const e = (await f.api('GET', `/api/v1/cases/${byAlias.id}/findings`)).body;
    expect(e.vulnerabilities).toEqual([{ id: 'GHSA-35jh-r3h4-6jhm', vulnerability: 'CVE-2021-23337', known_exploited: false }]);
    expect(e.findings.map((x: any) => x.component.purl)).toEqual(['pkg:npm/lodash@4.17.20']);
    expect(e.affected.devices_total).toBe(2);

    const unknown = await f.openCase({ vulnerability_ids: ['CVE-2026-99999'] });
    expect((await f.api('GET', `/api/v1/cases/${unknown.id}/findings`)).body).toEqual({
      vulnerability_ids: ['CVE-2026-99999'],
      vulnerabilities: [{ id: 'CVE-2026-99999', vulnerability: null, known_exploited: false }],
      findings: [],
      findings_total: 0,
      exposure: [],
      artifacts: [],
      affected: { devices: [], devices_total: 0, groups: [] },
    });
  });

  it("a severe incident without a vulnerability id: the devices and groups running the case's artifacts", async () => {
    const c = await f.openCase({ kind: 'severe_incident', vulnerability_ids: [], artifact_ids: [v1.id] });
    const e = (await f.api('GET', `/api/v1/cases/${c.id}/findings`)).body;
    expect(e.findings).toEqual([]);
    expect(e.artifacts).toEqual([{ id: v1.id, name: 'web-ui', version: '1.0.0', digest: v1.digest, devices: 2 }]);
    expect(e.affected.devices.map((d: any) => d.name)).toEqual(['lf-1', 'lf-2']);
  });

  it('is tenant-scoped: another tenant naming the same CVE sees none of these findings, and gets 404 for this case', async () => {
    const c = await f.openCase({ vulnerability_ids: ['CVE-2021-23337'] });
    const other = await f.t.newTenant();
    const otherAdmin = await f.t.apiKeyHeaders('admin', other);
    expect((await f.api('GET', `/api/v1/cases/${c.id}/findings`, undefined, otherAdmin)).status).toBe(404);
    const theirs = await f.openCase({ vulnerability_ids: ['CVE-2021-23337'] }, otherAdmin);
    const e = (await f.api('GET', `/api/v1/cases/${theirs.id}/findings`, undefined, otherAdmin)).body;
    expect(e.vulnerabilities[0]).toMatchObject({ vulnerability: 'CVE-2021-23337' });
    expect(e).toMatchObject({ findings: [], findings_total: 0, exposure: [{ artifacts: [], devices: 0 }], affected: { devices_total: 0 } });
  });

  it('the export holds the findings and exposure as they were at export time, listed in the signed manifest', async () => {
    const c = await f.openCase({ vulnerability_ids: ['CVE-2021-23337'], artifact_ids: [v2.id] });
    const linked = (await f.api('GET', `/api/v1/cases/${c.id}/findings`)).body;
    const res = await f.t.app.inject({ method: 'GET', url: `/api/v1/cases/${c.id}/export`, headers: f.admin });
    expect(res.statusCode, res.body).toBe(200);
    const files = await untar(res.rawPayload);
    const bytes = files.get('findings/findings-and-exposure.json')!;
    const manifest = JSON.parse(files.get('manifest.json')!.toString());
    const entry = manifest.files.find((x: any) => x.path === 'findings/findings-and-exposure.json');
    expect(entry).toEqual({
      path: 'findings/findings-and-exposure.json',
      length: bytes.length,
      digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
    });
    const exported = JSON.parse(bytes.toString());
    expect(exported).toEqual({ exported_at: manifest.exported_at, artifact_ids: [v2.id], ...linked });
    expect(exported.findings[0]).toMatchObject({ vulnerability: 'CVE-2021-23337', artifact: { id: v1.id } });
    expect(exported.affected.devices.map((d: any) => d.name)).toEqual(['lf-1', 'lf-2']);

    // VEX closes the finding later: the API follows, the archive keeps what was true when it was made
    const vex = await f.t.app.inject({
      method: 'POST',
      url: `/api/v1/artifacts/${v1.id}/vex`,
      headers: { ...f.admin, 'content-type': 'application/openvex+json' },
      payload: JSON.stringify({
        '@context': 'https://openvex.dev/ns/v0.2.0',
        '@id': 'https://example.test/vex/1',
        author: 'Security Team',
        timestamp: '2026-01-01T00:00:00Z',
        version: 1,
        statements: [
          {
            vulnerability: { name: 'CVE-2021-23337' },
            products: [{ '@id': 'pkg:generic/web-ui@1.0.0', subcomponents: [{ '@id': 'pkg:npm/lodash@4.17.20' }] }],
            status: 'not_affected',
            justification: 'vulnerable_code_not_in_execute_path',
          },
        ],
      }),
    });
    expect(vex.statusCode, vex.body).toBe(201);
    const after = (await f.api('GET', `/api/v1/cases/${c.id}/findings`)).body;
    expect(after.findings[0].open).toBe(false);
    expect(after.affected.devices_total).toBe(0);
    expect(exported.findings[0].open).toBe(true);
  });

  it('a viewer reads it; bad ids are 404, never a 500', async () => {
    const c = await f.openCase({ vulnerability_ids: ['CVE-2021-23337'] });
    expect((await f.api('GET', `/api/v1/cases/${c.id}/findings`, undefined, await f.t.apiKeyHeaders('viewer'))).status).toBe(200);
    expect((await f.api('GET', '/api/v1/cases/not-a-uuid/findings')).status).toBe(404);
    expect((await f.api('GET', '/api/v1/cases/00000000-0000-4000-8000-000000000000/findings')).status).toBe(404);
  });
});
