/**
 * Matching details over the API: a finding's `fixed_versions` answer "which version fixes
 * what I run" (the fixes of the ranges that matched the installed version, in the
 * ecosystem's order, never at or below it) beside the whole record's fixes; partial npm
 * bounds (`1.0`) are read as osv-scanner reads them, and a range bound no ordering can read
 * is counted and named on the import, never dropped without a trace; a record withdrawn
 * after its findings were raised removes them through the re-analysis, counted on the run
 * and audited per finding.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVulnAnalysis } from '../../../src/jobs/vuln-analysis.js';
import { availableDrivers } from '../../helpers/store.js';
import { cyclonedx, osvRecord, osvZip } from '../../helpers/feeds.js';
import { createReleaseFixture, type ReleaseFixture } from '../../fixtures/release-flow.js';

type Events = Record<string, string>[];
const semver = (...events: Events) => ({ type: 'SEMVER' as const, events });
const eco = (...events: Events) => ({ type: 'ECOSYSTEM' as const, events });

const JWT = osvRecord({
  id: 'GHSA-jwtj-wtjw-tjwt',
  aliases: ['CVE-2024-7001'],
  affected: [
    {
      ecosystem: 'npm',
      name: 'tiny-jwt-verify',
      ranges: [semver({ introduced: '0' }, { fixed: '4.2.0' }), semver({ introduced: '5.0.0' }, { fixed: '5.1.3' })],
    },
  ],
});
// two records of one CVE for one package, each with the fix of its own line: ordered by SemVer, not as text
const ORDER_A = osvRecord({
  id: 'GHSA-orda-orda-orda',
  aliases: ['CVE-2024-7002'],
  affected: [{ ecosystem: 'npm', name: 'ordered-pkg', ranges: [semver({ introduced: '0' }, { fixed: '10.0.0' })] }],
});
const ORDER_B = osvRecord({
  id: 'GHSA-ordb-ordb-ordb',
  aliases: ['CVE-2024-7002'],
  affected: [
    { ecosystem: 'npm', name: 'ordered-pkg', ranges: [semver({ introduced: '0' }, { fixed: '8.0.1' }), semver({ introduced: '9.0.0' }, { fixed: '9.1.0' })] },
  ],
});
const PARTIAL = osvRecord({
  id: 'GHSA-part-part-part',
  affected: [{ ecosystem: 'npm', name: 'partial-pkg', ranges: [eco({ introduced: '1.0' }, { fixed: '1.2' })] }],
});
const UNREADABLE = osvRecord({
  id: 'GHSA-unre-unre-unre',
  affected: [
    { ecosystem: 'npm', name: 'unreadable-pkg', ranges: [semver({ introduced: '0' }, { fixed: 'next' })] },
    { ecosystem: 'PyPI', name: 'unreadable-py', ranges: [eco({ introduced: '0' }, { fixed: 'not a version' })] },
    { ecosystem: 'Debian:12', name: 'unreadable-deb', ranges: [eco({ introduced: '0' }, { fixed: '1.0 beta' })] },
    { ecosystem: 'RubyGems', name: 'unreadable-gem', ranges: [eco({ introduced: '0' }, { fixed: '2.0' })] },
  ],
});
const LATER_WITHDRAWN = (withdrawn?: string) =>
  osvRecord({
    id: 'GHSA-wdrn-wdrn-wdrn',
    aliases: ['CVE-2024-7003'],
    modified: withdrawn ?? '2024-01-01T00:00:00Z',
    ...(withdrawn ? { withdrawn } : {}),
    affected: [{ ecosystem: 'npm', name: 'retracted-pkg', ranges: [semver({ introduced: '0' }, { fixed: '2.0.0' })] }],
  });
const WITHDRAWN_FIRST = osvRecord({
  id: 'GHSA-wdfi-wdfi-wdfi',
  modified: '2024-03-01T00:00:00Z',
  withdrawn: '2024-03-01T00:00:00Z',
  affected: [{ ecosystem: 'npm', name: 'retracted-pkg', ranges: [semver({ introduced: '0' }, { fixed: '3.0.0' })] }],
});

const PURLS = [
  'pkg:npm/tiny-jwt-verify@5.1.2',
  'pkg:npm/ordered-pkg@9.0.0',
  'pkg:npm/partial-pkg@1.1.0',
  'pkg:npm/unreadable-pkg@1.0.0',
  'pkg:npm/retracted-pkg@1.0.0',
];

describe.each(availableDrivers())('vulnerability matching details on %s', (driver) => {
  let f: ReleaseFixture;
  let app: any;
  const db = () => f.t.testStore.store.db;
  const analyze = () => runVulnAnalysis(db(), () => f.t.clock.now(), { owner: 'test' });
  const postZip = (records: Record<string, unknown>[]) =>
    f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/osv?source=test',
      headers: { ...f.admin, 'content-type': 'application/zip' },
      payload: osvZip(records),
    });
  const finding = async (purl: string) =>
    (await f.api('GET', `/api/v1/artifacts/${app.id}/findings?limit=200`)).body.findings.find((x: any) => x.component.purl === purl);

  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    app = (await f.upload({ name: 'matching-app', version: '1.0.0', kind: 'config', bytes: 'matching app' })).body;
    const attached = await f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${app.id}/sbom`,
      headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: cyclonedx(PURLS),
    });
    expect(attached.statusCode, attached.body).toBe(200);
    const imp = await postZip([JWT, ORDER_A, ORDER_B, PARTIAL, UNREADABLE, LATER_WITHDRAWN(), WITHDRAWN_FIRST]);
    expect(imp.statusCode, imp.body).toBe(201);
    await analyze();
  });
  afterAll(async () => {
    await f?.dispose();
  });

  it('fixed_versions: the fixes of the ranges that matched the installed version, in SemVer order; the record keeps all of its fixes', async () => {
    const jwt = await finding('pkg:npm/tiny-jwt-verify@5.1.2');
    expect(jwt.fixed_versions).toEqual(['5.1.3']);
    expect(jwt.record_fixed_versions).toEqual(['4.2.0', '5.1.3']);
    const ordered = await finding('pkg:npm/ordered-pkg@9.0.0');
    expect(ordered.advisories).toEqual(['GHSA-orda-orda-orda', 'GHSA-ordb-ordb-ordb']);
    expect(ordered.fixed_versions).toEqual(['9.1.0', '10.0.0']);
    expect(ordered.record_fixed_versions).toEqual(['8.0.1', '9.1.0', '10.0.0']);
    // the exposure's per-artifact union reads the same, in the same order
    const exp = (await f.api('GET', '/api/v1/vulnerabilities/CVE-2024-7002/exposure')).body;
    expect(exp.artifacts).toMatchObject([{ id: app.id, fixed_versions: ['9.1.0', '10.0.0'] }]);
    const jwtExp = (await f.api('GET', '/api/v1/vulnerabilities/CVE-2024-7001/exposure')).body;
    expect(jwtExp.artifacts[0].fixed_versions).toEqual(['5.1.3']);
  });

  it('an npm bound written as a partial version (1.0, 1.2) is read as 1.0.0 and 1.2.0, as osv-scanner reads it', async () => {
    const partial = await finding('pkg:npm/partial-pkg@1.1.0');
    expect(partial).toBeDefined();
    expect(partial.matched_by).toEqual([
      {
        advisory: 'GHSA-part-part-part',
        ecosystem: 'npm',
        release: null,
        how: 'range',
        range_type: 'ECOSYSTEM',
        ordering: 'semver',
        introduced: '1.0',
        fixed: '1.2',
        last_affected: null,
      },
    ]);
    expect(partial.fixed_versions).toEqual(['1.2']);
  });

  it('a range no ordering can read is counted and named on the import (npm, PyPI, Debian, an ecosystem without an ordering)', async () => {
    expect(await finding('pkg:npm/unreadable-pkg@1.0.0')).toBeUndefined();
    const imports = (await f.api('GET', '/api/v1/vuln-feeds/imports')).body.imports;
    const imp = imports.find((i: any) => i.added === 7);
    expect(imp).toMatchObject({ skipped: 0, ranges_skipped: 4 });
    expect(imp.ranges_skipped_detail).toEqual([
      { record: 'GHSA-unre-unre-unre', package: 'npm|unreadable-pkg', range_type: 'SEMVER', reason: 'fixed "next": not a version in the semver ordering' },
      {
        record: 'GHSA-unre-unre-unre',
        package: 'PyPI|unreadable-py',
        range_type: 'ECOSYSTEM',
        reason: 'fixed "not a version": not a version in the pep440 ordering',
      },
      {
        record: 'GHSA-unre-unre-unre',
        package: 'Debian:12|unreadable-deb',
        range_type: 'ECOSYSTEM',
        reason: 'fixed "1.0 beta": not a version in the dpkg ordering',
      },
      {
        record: 'GHSA-unre-unre-unre',
        package: 'RubyGems|unreadable-gem',
        range_type: 'ECOSYSTEM',
        reason: 'no version ordering for RubyGems: only the versions list is matched',
      },
    ]);
    const one = (await f.api('GET', `/api/v1/vuln-feeds/imports/${imp.id}`)).body;
    expect(one).toMatchObject({ ranges_skipped: 4 });
    const batch = await sql<{
      detail: any;
    }>`SELECT detail FROM audit_events WHERE action = 'vuln-feed.import.batch' AND target = ${`vuln-import:${imp.id}`}`.execute(db());
    expect(batch.rows.map((r) => r.detail.ranges_skipped)).toEqual([4]);
    const done = await sql<{
      detail: any;
    }>`SELECT detail FROM audit_events WHERE action = 'vuln-feed.import.complete' AND target = ${`vuln-import:${imp.id}`}`.execute(db());
    expect(done.rows[0]!.detail.ranges_skipped).toBe(4);
  });

  it('a withdrawn record raises nothing; a record withdrawn later removes its findings, counted on the run and audited per finding', async () => {
    // the record withdrawn from the start matched nothing; the other one did
    const before = await finding('pkg:npm/retracted-pkg@1.0.0');
    expect(before.advisories).toEqual(['GHSA-wdrn-wdrn-wdrn']);
    expect(before.fixed_versions).toEqual(['2.0.0']);
    const runsBefore = (await f.api('GET', '/api/v1/vuln-analysis/runs')).body.runs.length;

    const imp = await postZip([LATER_WITHDRAWN('2024-05-01T00:00:00Z')]);
    const withdrawal = JSON.parse(imp.body);
    expect(withdrawal).toMatchObject({ updated: 1 });
    await analyze();

    expect(await finding('pkg:npm/retracted-pkg@1.0.0')).toBeUndefined();
    expect((await f.api('GET', '/api/v1/findings?vulnerability=CVE-2024-7003')).body.total).toBe(0);
    const runs = (await f.api('GET', '/api/v1/vuln-analysis/runs')).body.runs;
    expect(runs.length).toBe(runsBefore + 1);
    expect(runs.find((r: any) => r.reason === `osv-import:${withdrawal.id}`)).toMatchObject({
      state: 'completed',
      findings_removed: 1,
      findings_withdrawn: 1,
      findings_added: 0,
    });
    const audit = await sql<{ target: string; actor: string; detail: any }>`
      SELECT target, actor, detail FROM audit_events WHERE action = 'vuln-finding.withdrawn'`.execute(db());
    expect(audit.rows).toEqual([
      {
        target: `vuln-finding:${before.id}`,
        actor: 'system:vuln-analysis',
        detail: {
          vulnerability: 'CVE-2024-7003',
          artifact_id: app.id,
          component: 'pkg:npm/retracted-pkg@1.0.0',
          withdrawn: ['GHSA-wdrn-wdrn-wdrn'],
        },
      },
    ]);
    const complete = await sql<{ detail: any }>`
      SELECT detail FROM audit_events WHERE action = 'vuln-analysis.complete' ORDER BY seq DESC LIMIT 1`.execute(db());
    expect(complete.rows[0]!.detail).toMatchObject({ findings_removed: 1, findings_withdrawn: 1 });
    // the record stays readable, marked withdrawn
    const v = (await f.api('GET', '/api/v1/vulnerabilities/CVE-2024-7003')).body;
    expect(v.advisories).toMatchObject([{ id: 'GHSA-wdrn-wdrn-wdrn', withdrawn: '2024-05-01T00:00:00.000Z' }]);
    // the other findings were left as they were
    expect(await finding('pkg:npm/tiny-jwt-verify@5.1.2')).toBeDefined();
  });
});
