import { sql } from 'kysely';
import { runVulnAnalysis } from '../../src/jobs/vuln-analysis.js';
import { reportLegacyStatus } from '../../src/resources/rollouts/commands.js';
import { LEASE_MS } from '../../src/resources/vuln-analysis/commands.js';
import { deviceActor, runUnitOfWork } from '../../src/resources/unit-of-work.js';
import { auditCrashSuite, type AuditCrashRow } from '../helpers/audit-crash.js';
import { cyclonedx, kevCatalog, makeTar, osvRecord } from '../helpers/feeds.js';
import { expect } from 'vitest';
import type { ReleaseFixture } from '../fixtures/release-flow.js';

/** An uncompressed tar of OSV records: ASCII bytes, so it travels to the child as a JSON string. */
async function feedTar(ids: string[]): Promise<string> {
  const recs = ids.map((id) =>
    osvRecord({
      id,
      affected: [{ ecosystem: 'npm', name: `pkg-${id.toLowerCase()}`, ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }] }] }],
    }),
  );
  return (await makeTar(recs.map((r) => ({ name: `${String(r['id'])}.json`, data: JSON.stringify(r) })))).toString('latin1');
}

const osvRequest = async (source: string, ids: string[]) => ({
  method: 'POST' as const,
  url: `/api/v1/vuln-feeds/osv?source=${source}`,
  payload: await feedTar(ids),
  headers: { 'content-type': 'application/x-tar' },
});
const count = async (f: ReleaseFixture, q: ReturnType<typeof sql<{ n: string }>>) => Number((await q.execute(f.t.testStore.store.db)).rows[0]!.n);

const rows: AuditCrashRow[] = [
  {
    name: 'OSV import start (the import row)',
    action: 'vuln-feed.import.start',
    prepare: async () => ({ request: await osvRequest('crash-start', ['GHSA-cras-hsta-rt01']), observe: { method: 'GET', url: '/api/v1/vuln-feeds/imports' } }),
  },
  {
    name: 'OSV import batch (records written)',
    action: 'vuln-feed.import.batch',
    prepare: async (f) => ({
      request: await osvRequest('crash-batch', ['GHSA-cras-hbat-ch01']),
      observe: () => count(f, sql<{ n: string }>`SELECT count(*) AS n FROM vuln_advisories WHERE id = 'GHSA-cras-hbat-ch01'`),
    }),
  },
  {
    name: 'OSV import completion (analysis queued); the re-POST resumes and completes',
    action: 'vuln-feed.import.complete',
    prepare: async (f) => ({
      request: await osvRequest('crash-complete', ['GHSA-cras-hcom-ple1']),
      observe: () => count(f, sql<{ n: string }>`SELECT count(*) AS n FROM vuln_imports WHERE source = 'crash-complete' AND state = 'completed'`),
    }),
  },
  {
    name: 'KEV catalog import',
    action: 'vuln-feed.kev.import',
    prepare: async () => ({
      request: { method: 'POST', url: '/api/v1/vuln-feeds/kev', payload: kevCatalog([{ cve: 'CVE-2024-7777' }], { version: 'crash' }) },
      observe: { method: 'GET', url: '/api/v1/vuln-feeds' },
    }),
  },
  {
    name: 'VEX attach',
    action: 'vex.attach',
    prepare: async (f) => {
      const a = (await f.upload({ name: 'vex-crash', version: '1.0.0', kind: 'config', bytes: 'vex crash' })).body;
      const doc = {
        '@context': 'https://openvex.dev/ns/v0.2.0',
        '@id': 'https://example.com/vex/crash',
        author: 'team',
        timestamp: '2024-01-01T00:00:00Z',
        version: 1,
        statements: [{ vulnerability: { name: 'CVE-2024-7777' }, products: [{ '@id': 'pkg:oci/vex-crash' }], status: 'under_investigation' }],
      };
      return {
        request: {
          method: 'POST',
          url: `/api/v1/artifacts/${a.id}/vex`,
          payload: JSON.stringify(doc),
          headers: { 'content-type': 'application/openvex+json' },
        },
        observe: { method: 'GET', url: `/api/v1/artifacts/${a.id}/vex` },
      };
    },
  },
  {
    name: 'known-exploited signal, raised inside an SBOM attach (a device runs the artifact)',
    action: 'vuln-finding.known-exploited',
    prepare: async (f) => {
      const rec = osvRecord({
        id: 'GHSA-sign-alcr-ash1',
        aliases: ['CVE-2024-8888'],
        affected: [{ ecosystem: 'npm', name: 'signalled', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }] }] }],
      });
      await f.t.app.inject({
        method: 'POST',
        url: '/api/v1/vuln-feeds/osv?source=crash-signal',
        headers: { ...f.admin, 'content-type': 'application/x-tar' },
        payload: await makeTar([{ name: 'r.json', data: JSON.stringify(rec) }]),
      });
      await f.t.app.inject({
        method: 'POST',
        url: '/api/v1/vuln-feeds/kev',
        headers: f.admin,
        payload: kevCatalog([{ cve: 'CVE-2024-8888' }], { version: 'crash-signal', released: '2030-01-01T00:00:00.000Z' }),
      });
      const a = (await f.upload({ name: 'signal-crash', version: '1.0.0', kind: 'config', bytes: 'signal crash' })).body;
      await f.device('signal-dev');
      const g = (await f.api('POST', '/api/v1/groups', { name: 'signal-group', members: ['signal-dev'] })).body;
      const legacy = (await f.api('POST', '/api/v1/rollouts', { artifact_id: a.id, group_id: g.id })).body;
      await runUnitOfWork(f.t.testStore.store.db, { tenant: f.t.tenantId, actor: deviceActor('signal-dev'), now: new Date() }, (uow) =>
        reportLegacyStatus(uow, { deviceName: 'signal-dev', rolloutId: legacy.id, status: 'installed' }),
      );
      return {
        request: {
          method: 'PUT',
          url: `/api/v1/artifacts/${a.id}/sbom`,
          payload: cyclonedx(['pkg:npm/signalled@1.0.0']),
          headers: { 'content-type': 'application/vnd.cyclonedx+json' },
        },
        observe: { method: 'GET', url: '/api/v1/findings?known_exploited=true' },
      };
    },
  },
  {
    name: 'finding removed because its record was withdrawn, inside an SBOM attach',
    action: 'vuln-finding.withdrawn',
    prepare: async (f) => {
      const rec = (withdrawn?: string) =>
        osvRecord({
          id: 'GHSA-with-draw-ncr1',
          modified: withdrawn ?? '2024-01-01T00:00:00Z',
          ...(withdrawn ? { withdrawn } : {}),
          affected: [{ ecosystem: 'npm', name: 'withdrawn-crash', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }] }] }],
        });
      const feed = async (r: Record<string, unknown>, source: string) =>
        f.t.app.inject({
          method: 'POST',
          url: `/api/v1/vuln-feeds/osv?source=${source}`,
          headers: { ...f.admin, 'content-type': 'application/x-tar' },
          payload: await makeTar([{ name: 'r.json', data: JSON.stringify(r) }]),
        });
      await feed(rec(), 'crash-withdrawn-1');
      const a = (await f.upload({ name: 'withdrawn-crash', version: '1.0.0', kind: 'config', bytes: 'withdrawn crash' })).body;
      const attach = {
        method: 'PUT' as const,
        url: `/api/v1/artifacts/${a.id}/sbom`,
        payload: cyclonedx(['pkg:npm/withdrawn-crash@1.0.0']),
        headers: { 'content-type': 'application/vnd.cyclonedx+json' },
      };
      await f.t.app.inject({ ...attach, headers: { ...f.admin, ...attach.headers } });
      const findings = () => count(f, sql<{ n: string }>`SELECT count(*) AS n FROM vuln_findings WHERE artifact_id = ${a.id}`);
      expect(await findings()).toBe(1);
      await feed(rec('2024-06-01T00:00:00Z'), 'crash-withdrawn-2');
      // the SBOM attached again re-matches the artifact: its finding goes, with its audit row
      return { request: attach, observe: findings };
    },
  },
  {
    name: 'analysis run completion (its last batch: findings written, run completed); the restarted job takes over the lapsed lease and completes it',
    action: 'vuln-analysis.complete',
    prepare: async (f) => {
      const db = f.t.testStore.store.db;
      // a clock past any lease: what a restarted server sees once the dead process's lease lapsed
      const later = () => new Date(Date.now() + LEASE_MS + 60_000);
      while ((await runVulnAnalysis(db, later)) > 0);
      const a = (await f.upload({ name: 'analysis-crash', version: '1.0.0', kind: 'config', bytes: 'analysis crash' })).body;
      const sbom = await f.t.app.inject({
        method: 'PUT',
        url: `/api/v1/artifacts/${a.id}/sbom`,
        headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
        payload: cyclonedx(['pkg:npm/analysis-crash@1.0.0']),
      });
      expect(sbom.statusCode, sbom.body).toBe(200);
      // the record arrives after the SBOM: only the re-analysis it queues finds it
      const rec = osvRecord({
        id: 'GHSA-anal-ysis-cra1',
        affected: [{ ecosystem: 'npm', name: 'analysis-crash', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '2.0.0' }] }] }],
      });
      const feed = await f.t.app.inject({
        method: 'POST',
        url: '/api/v1/vuln-feeds/osv?source=crash-analysis',
        headers: { ...f.admin, 'content-type': 'application/x-tar' },
        payload: await makeTar([{ name: 'r.json', data: JSON.stringify(rec) }]),
      });
      expect(feed.statusCode, feed.body).toBeLessThan(300);
      expect(await count(f, sql<{ n: string }>`SELECT count(*) AS n FROM vuln_analysis_runs WHERE state = 'queued'`)).toBe(1);
      return {
        request: {
          job: 'vuln-analysis',
          restart: async () => {
            // the killed process's transaction (it holds the run's row lock) ends when the database
            // sees its connection close; the job skips a locked run, so the restart polls like the
            // interval job does
            let batches = 0;
            for (let i = 0; i < 40 && batches === 0; i++) {
              batches = await runVulnAnalysis(db, later);
              if (batches === 0) await new Promise((r) => setTimeout(r, 250));
            }
            expect(batches).toBeGreaterThan(0);
          },
        },
        observe: async () => ({
          findings: await count(f, sql<{ n: string }>`SELECT count(*) AS n FROM vuln_findings WHERE artifact_id = ${a.id}`),
          completed: await count(f, sql<{ n: string }>`SELECT count(*) AS n FROM vuln_analysis_runs WHERE state = 'completed'`),
        }),
      };
    },
  },
];

auditCrashSuite('vulnerabilities', rows);
