/**
 * The vulnerability and readiness reports over HTTP on a fleet whose figures are known by
 * construction (fixtures/reports.ts): the JSON twin against the findings, devices, receipts,
 * artifacts, keys, TUF and cases APIs; the PDF read back with poppler (`pdftotext`, and pages
 * rendered by `pdftoppm`) against the JSON twin; branding visible (name, logo, accent colour,
 * footer); the audit row carrying the SHA-256 of the bytes served; product and severity scope;
 * bad input a 400 (never a 500) and nothing audited; tenants isolated; lists longer than a
 * database page.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireTool } from '../../../../vitest.shared.js';
import { timeText } from '../../src/reports/pdf.js';
import { REPORT_PAGE } from '../../src/resources/reports/document.js';
import { availableDrivers } from '../helpers/store.js';
import { cyclonedx, osvRecord, osvZip } from '../helpers/feeds.js';
import { countColor, pdfAttachments, pdfFonts, pdfPageCount, pdfTool, pdfToText, renderPage } from '../helpers/pdf.js';
import { createReleaseFixture, newAuthorizer, releasePayload, sign } from '../fixtures/release-flow.js';
import { BRANDING, buildReportsWorld, type ReportsWorld } from '../fixtures/reports.js';

const POPPLER = ['pdftotext', 'pdftoppm', 'pdfinfo', 'pdffonts', 'pdfdetach'].every((t) => requireTool(t, 'poppler-utils'));

const sha256 = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Every value printed for a figure label (`label` then two or more spaces then the value, on one line). */
function figures(text: string, label: string): string[] {
  return [...text.matchAll(new RegExp(`^\\s*${escape(label)}\\s{2,}(\\S.*?)\\s*$`, 'gm'))].map((m) => m[1]!);
}
const figure = (text: string, label: string): string => {
  const all = figures(text, label);
  expect(all.length, `figure "${label}" in:\n${text}`).toBeGreaterThan(0);
  return all[0]!;
};
const share = (part: number, whole: number) => `${part} of ${whole} (${whole === 0 ? '-' : `${((100 * part) / whole).toFixed(1)}%`})`;

describe.each(availableDrivers())('reports on %s', (driver) => {
  let w: ReportsWorld;
  const api = (method: string, url: string, payload?: unknown, headers?: Record<string, string>) => w.f.api(method, url, payload, headers);
  const get = async (url: string, headers?: Record<string, string>) => {
    const r = await w.f.t.app.inject({ method: 'GET', url, headers: headers ?? w.f.admin });
    return { status: r.statusCode, raw: r.rawPayload, headers: r.headers, json: () => JSON.parse(r.body) };
  };
  const reportAudits = async () => (await api('GET', '/api/v1/audit?action=report.generate&limit=200')).body;

  beforeAll(async () => {
    w = await buildReportsWorld(driver);
  }, 300_000);
  afterAll(async () => {
    await w?.f.dispose();
  });

  it('vulnerability JSON twin: the findings as the findings API counts them, known exploited first, per product and artifact', async () => {
    const r = await get('/api/v1/reports/vulnerability.json');
    expect(r.status, r.raw.toString()).toBe(200);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    const j = r.json();
    const now = w.f.t.clock.now().toISOString();
    expect(j.report).toMatchObject({
      kind: 'vulnerability',
      schema: 'svc.report.vulnerability.v1',
      tenant: { id: w.tenant },
      company: BRANDING.company_name,
      generated_at: now,
      data_cutoff: { at: now },
      scope: { product: null, severity: null },
    });
    expect(Number(j.report.data_cutoff.audit_seq)).toBeGreaterThan(0);

    const all = (await api('GET', '/api/v1/findings')).body;
    const open = (await api('GET', '/api/v1/findings?open=true')).body;
    const closed = (await api('GET', '/api/v1/findings?open=false')).body;
    const kev = (await api('GET', '/api/v1/findings?known_exploited=true')).body;
    const kevOpen = (await api('GET', '/api/v1/findings?known_exploited=true&open=true')).body;
    expect(j.summary).toMatchObject({
      findings: all.total,
      open: open.total,
      closed: closed.total,
      known_exploited: kev.total,
      known_exploited_open: kevOpen.total,
    });
    expect([j.summary.findings, j.summary.open, j.summary.closed, j.summary.known_exploited]).toEqual([4, 3, 1, 1]);
    for (const s of Object.keys(all.counts)) expect(j.summary.by_severity[s], s).toEqual({ total: all.counts[s], open: open.counts[s] });
    for (const v of ['none', 'affected', 'under_investigation', 'not_affected', 'fixed']) {
      expect(j.summary.by_vex_status[v], v).toBe((await api('GET', `/api/v1/findings?vex_status=${v}`)).body.total);
    }
    // exposure: devices whose open findings (GET /devices/{name}/findings) are not empty
    const exposed: string[] = [];
    for (const d of ['d1', 'd2', 'd3', 'd4', 'd5', 'd6']) if ((await api('GET', `/api/v1/devices/${d}/findings`)).body.total > 0) exposed.push(d);
    expect(exposed).toEqual(['d1', 'd2']);
    expect(j.summary).toMatchObject({
      exposed_devices: exposed.length,
      exposed_devices_known_exploited: 2,
      artifacts_with_findings: 2,
      artifacts_with_open_findings: 2,
    });

    const feeds = (await api('GET', '/api/v1/vuln-feeds')).body;
    expect(j.freshness).toMatchObject({
      advisories: feeds.advisories,
      newest_advisory_modified_at: feeds.newest_modified,
      osv: [{ source: 'osv:test', imports: 1 }],
      kev: { catalog_version: '2024.06.01', entries: 1 },
      analysis: { pending_runs: 0 },
    });

    expect(j.known_exploited).toHaveLength(1);
    expect(j.known_exploited[0]).toMatchObject({
      id: kev.findings[0].id,
      vulnerability: 'CVE-2021-44228',
      known_exploited: true,
      kev_date_added: '2021-12-10',
      artifact: { id: w.app1.id, name: 'app', version: '1.0.0' },
      devices: 2,
      fixed_versions: ['2.15.0'],
      fixed_by: [{ product: 'edge-gateway', version: '2.0.0' }],
      vex: { status: null },
      open: true,
    });

    expect(j.products.map((p: any) => [p.product, p.latest_release.version, p.releases])).toEqual([
      ['edge-gateway', '2.0.0', 2],
      ['sensor', '1.0.0', 1],
    ]);
    const [edge, sensor] = j.products;
    expect(edge.summary).toMatchObject({ findings: (await api('GET', '/api/v1/findings?product=edge-gateway')).body.total, open: 2, exposed_devices: 2 });
    expect(edge.artifacts.map((a: any) => [a.name, a.version, a.sbom, a.releases, a.devices, a.counts.total, a.counts.open, a.counts.known_exploited])).toEqual(
      [
        ['app', '1.0.0', true, ['1.0.0'], 2, 3, 2, 1],
        ['app', '2.0.0', true, ['2.0.0'], 2, 0, 0, 0],
      ],
    );
    expect(edge.artifacts[0].counts.open_by_severity).toMatchObject({ critical: 2, low: 0 });
    // an artifact's findings: exactly the artifact findings API's, in its order (known exploited first)
    const listed = (await api('GET', `/api/v1/artifacts/${w.app1.id}/findings`)).body.findings;
    expect(edge.artifacts[0].findings.map((f: any) => f.id)).toEqual(listed.map((f: any) => f.id));
    expect(edge.artifacts[0].findings[0]).toMatchObject({ vulnerability: 'CVE-2021-44228', known_exploited: true });
    expect(edge.artifacts[0].findings.find((f: any) => f.vulnerability === 'PYSEC-2024-2')).toMatchObject({
      severity: 'low',
      open: false,
      vex: { status: 'not_affected', justification: 'vulnerable_code_not_in_execute_path' },
      fixed_versions: ['2.31.0'],
      fixed_by: [],
    });
    // an open finding: the advisory's CVSS vector, and the newest release of the product in which it is
    // no longer open (edge-gateway 2.0.0 ships lodash 4.17.21); the vector as the feed gave it
    const lodash = edge.artifacts[0].findings.find((f: any) => f.aliases.includes('CVE-2021-23337'));
    expect(lodash).toMatchObject({
      open: true,
      cvss_vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H',
      fixed_versions: ['4.17.21'],
      fixed_by: [{ product: 'edge-gateway', version: '2.0.0' }],
    });
    // the same rule as the known-exploited section's fixing release
    const log4j = edge.artifacts[0].findings.find((f: any) => f.vulnerability === 'CVE-2021-44228');
    expect(log4j.fixed_by).toEqual(j.known_exploited.find((k: any) => k.vulnerability === 'CVE-2021-44228').fixed_by);
    expect(sensor.artifacts).toMatchObject([{ name: 'tool', sbom: false, devices: 1, counts: { total: 0 }, findings: [] }]);
    expect(j.unreleased_artifacts).toMatchObject([
      { name: 'lib', version: '0.1.0', releases: [], devices: 0, counts: { total: 1, open: 1, open_by_severity: { medium: 1 } } },
    ]);
  });

  it.skipIf(!POPPLER)('vulnerability PDF: the same figures as the JSON twin, branded (name, logo, accent colour, footer), known exploited first', async () => {
    const [j, p] = [(await get('/api/v1/reports/vulnerability.json')).json(), await get('/api/v1/reports/vulnerability.pdf')];
    expect(p.status).toBe(200);
    expect(p.headers['content-type']).toBe('application/pdf');
    expect(p.headers['content-disposition']).toMatch(/^attachment; filename="vulnerability-report-\d{4}-\d\d-\d\dT\d{6}\d{3}Z\.pdf"$/);
    expect(p.raw.subarray(0, 5).toString()).toBe('%PDF-');
    const text = pdfToText(p.raw);
    const s = j.summary;
    expect(figure(text, 'Findings')).toBe(String(s.findings));
    expect(figure(text, 'Open findings (not closed by VEX)')).toBe(String(s.open));
    expect(figure(text, 'Closed by VEX (not_affected, fixed)')).toBe(String(s.closed));
    expect(figure(text, 'Known exploited')).toBe(String(s.known_exploited));
    expect(figure(text, 'Known exploited, open')).toBe(String(s.known_exploited_open));
    expect(figure(text, 'Artifacts with open findings')).toBe(String(s.artifacts_with_open_findings));
    expect(figure(text, 'Devices exposed (open findings)')).toBe(String(s.exposed_devices));
    expect(figure(text, 'Devices exposed to known-exploited')).toBe(String(s.exposed_devices_known_exploited));
    expect(figure(text, 'OSV advisories stored')).toBe(String(j.freshness.advisories));
    expect(figure(text, 'KEV catalog')).toMatch(
      new RegExp(
        `^version ${escape(j.freshness.kev.catalog_version)}, ${j.freshness.kev.entries} ${j.freshness.kev.entries === 1 ? 'entry' : 'entries'}, imported`,
      ),
    );
    // the severity chart's values are the open counts (with the VEX-closed ones noted)
    expect(text).toMatch(new RegExp(`^\\s*critical\\s+${s.by_severity.critical.open}\\s*$`, 'm'));
    expect(text).toMatch(/^\s*low\s+0 \(1 closed by VEX\)\s*$/m);
    // per product and artifact, as in the twin
    expect(figures(text, 'Open findings').map(Number)).toEqual(j.products.map((x: any) => x.summary.open));
    const a = j.products[0].artifacts[0];
    expect(text).toContain(
      `SBOM yes | releases 1.0.0 | devices running ${a.devices} | findings ${a.counts.total}, open ${a.counts.open}, known exploited ${a.counts.known_exploited} | open by severity: critical 2`,
    );
    expect(text).toContain('No SBOM attached');
    // known exploited first: the KEV table precedes the product sections
    const kevAt = text.search(/^\s*CVE-2021-44228\s+app 1\.0\.0\s/m);
    expect(kevAt).toBeGreaterThan(0);
    expect(kevAt).toBeLessThan(text.indexOf('Product edge-gateway'));
    expect(text).toContain('CVE-2021-44228 [KEV]');
    expect(text.indexOf('CVE-2021-44228 [KEV]')).toBeLessThan(text.indexOf('CVE-2021-23337', text.indexOf('Product edge-gateway')));
    expect(text).toContain('Artifacts in no release');

    // generation time and data cut-off printed; branding on every page
    // times printed to the minute with their zone (the twin keeps the exact instants)
    expect(text).toContain(`Generated ${timeText(j.report.generated_at)}`);
    expect(text).toMatch(new RegExp(`Data cut-off ${escape(timeText(j.report.data_cutoff.at))} \\| one database snapshot; audit events up to #\\d+`));
    const pages = text.split('\f').filter((x) => x.trim() !== '');
    expect(pages.length).toBe(pdfPageCount(p.raw));
    pages.forEach((page, i) => {
      expect(page).toContain(BRANDING.company_name);
      expect(page).toMatch(new RegExp(`${escape(BRANDING.company_name)} - Confidential\\s+page ${i + 1} of ${pages.length}`));
    });
    // the logo (magenta) in the header's top-left corner and the accent colour (violet) drawn on page 1
    const page1 = renderPage(p.raw, 1, 60);
    const logoRegion = { x: 0, y: 0, w: Math.round(page1.width / 3), h: Math.round(page1.height / 10) };
    expect(countColor(page1, BRANDING.logo, { region: logoRegion })).toBeGreaterThan(200);
    expect(countColor(page1, BRANDING.accent_color)).toBeGreaterThan(300);
    // severity bars are vector rectangles in the severity colours
    expect(countColor(page1, '#991b1b')).toBeGreaterThan(200);
  });

  it('readiness JSON twin: figures equal the devices, receipts, releases, artifacts, findings, keys, TUF and cases APIs', async () => {
    const r = await get('/api/v1/reports/readiness.json');
    expect(r.status).toBe(200);
    const j = r.json();
    expect(j.report).toMatchObject({ kind: 'readiness', schema: 'svc.report.readiness.v1', company: BRANDING.company_name });

    const devices = (await api('GET', '/api/v1/devices')).body;
    expect(j.fleet).toEqual(devices.counts);
    expect(j.evidence.devices).toBe(devices.counts.online + devices.counts.offline);
    const receipts = (await api('GET', '/api/v1/release-receipts?label=software-key&limit=200')).body;
    const withReceipt = [...new Set(receipts.release_receipts.map((x: any) => x.device))].sort();
    expect(withReceipt).toEqual(['d1', 'd2', 'd4', 'd5']);
    // every device with receipts runs only what receipts say, except d3 (legacy) and d6 (nothing)
    expect(j.evidence).toEqual({ devices: 6, receipt: withReceipt.length, legacy: 1, none: 1, labels: { 'software-key': withReceipt.length } });

    const releases = (await api('GET', '/api/v1/releases?product=edge-gateway')).body;
    const newest = releases.releases.reduce((a: any, b: any) => (a.created_at >= b.created_at ? a : b));
    expect(j.products[0]).toEqual({
      product: 'edge-gateway',
      latest_release: { id: newest.id, version: '2.0.0', created_at: newest.created_at },
      releases: releases.total,
      devices: 4,
      on_latest: 2,
      with_receipt: 3,
    });
    expect(j.products[1]).toMatchObject({ product: 'sensor', devices: 1, on_latest: 1, with_receipt: 1 });

    const artifacts = (await api('GET', '/api/v1/artifacts?limit=200')).body;
    expect(j.sboms).toMatchObject({
      artifacts: artifacts.total,
      with_sbom: artifacts.artifacts.filter((x: any) => x.has_sbom).length,
      without_sbom: artifacts.artifacts.filter((x: any) => !x.has_sbom).length,
      released: { artifacts: 3, with_sbom: 2 },
      running_without_sbom: { total: 1, artifacts: [{ id: w.tool.id, name: 'tool', version: '1.0.0', devices: 1 }] },
    });

    const open = (await api('GET', '/api/v1/findings?open=true')).body;
    expect(j.findings.open).toBe(open.total);
    for (const s of Object.keys(open.counts))
      expect(
        j.findings.by_severity[s].reduce((x: number, y: number) => x + y, 0),
        s,
      ).toBe(open.counts[s]);
    expect(j.findings.age_buckets).toEqual(['0-7 days', '8-30 days', '31-90 days', 'over 90 days']);
    expect(j.findings.by_severity.critical).toEqual([2, 0, 0, 0]);

    const keys = (await api('GET', '/api/v1/authorizer-keys')).body;
    expect(j.keys.authorizer).toMatchObject({
      active: keys.counts.active,
      revoked: keys.counts.revoked,
      registered_last_365_days: 2,
      revoked_last_365_days: 1,
    });
    expect(j.keys.authorizer.keys.map((k: any) => [k.name, k.keyid, k.revoked_at === null])).toEqual(
      keys.authorizer_keys.map((k: any) => [k.name, k.keyid, k.revoked_at === null]),
    );

    const root = (await api('GET', `/api/v1/tuf/${w.tenant}/metadata/root.json`)).body;
    const timestamp = (await api('GET', `/api/v1/tuf/${w.tenant}/metadata/timestamp.json`)).body;
    expect(j.keys.signing_repository.root).toEqual({
      version: root.signed.version,
      rotations: root.signed.version - 1,
      threshold: root.signed.roles.root.threshold,
      keys: root.signed.roles.root.keyids.length,
      key_on_server: true,
    });
    const roles = Object.fromEntries(j.keys.signing_repository.roles.map((x: any) => [x.role, x]));
    expect(new Date(roles.root.expires_at).getTime()).toBe(new Date(root.signed.expires).getTime());
    expect(roles.timestamp.version).toBe(timestamp.signed.version);

    const cases = (await api('GET', '/api/v1/cases')).body;
    expect(j.cases.counts).toEqual(cases.counts);
    const detail = (await api('GET', `/api/v1/cases/${w.caseId}`)).body;
    expect(j.cases.active).toHaveLength(1);
    expect(j.cases.active[0]).toMatchObject({ id: w.caseId, state: 'open', title: detail.title, aware_at: detail.aware_at });
    expect(j.cases.active[0].deadlines).toEqual(detail.deadlines);
    expect(j.cases.active[0].deadlines[0]).toMatchObject({ obligation: 'early_warning', status: 'overdue' });
  });

  it.skipIf(!POPPLER)('readiness PDF: the same figures as the JSON twin, coverage drawn in the accent colour', async () => {
    const [j, p] = [(await get('/api/v1/reports/readiness.json')).json(), await get('/api/v1/reports/readiness.pdf')];
    expect(p.status).toBe(200);
    const text = pdfToText(p.raw);
    expect(figure(text, 'Devices in scope (not decommissioned)')).toBe(String(j.evidence.devices));
    expect(figure(text, 'Fleet: online / offline / decommissioned').replace(/\s/g, '')).toBe(`${j.fleet.online}/${j.fleet.offline}/${j.fleet.decommissioned}`);
    expect(figure(text, 'Devices with a device-signed receipt for their current state')).toBe(share(j.evidence.receipt, j.evidence.devices));
    expect(figure(text, 'Artifacts with an SBOM')).toBe(share(j.sboms.with_sbom, j.sboms.artifacts));
    expect(figure(text, 'Open findings')).toBe(String(j.findings.open));
    expect(figure(text, 'Active authorizer keys')).toBe(String(j.keys.authorizer.active));
    expect(figure(text, 'Rotations (revocations) in the last 365 days')).toBe(String(j.keys.authorizer.revoked_last_365_days));
    expect(figure(text, 'Root version')).toBe(String(j.keys.signing_repository.root.version));
    expect(figure(text, 'Root private key')).toBe('on the server (export it for offline custody)');
    expect(figure(text, 'Open Article 14 cases')).toBe(String(j.cases.counts.open + j.cases.counts.reportable));
    expect(figure(text, 'labelled software-key')).toBe(String(j.evidence.labels['software-key']));
    expect(figure(text, 'Legacy device-reported status (some component)')).toBe(share(j.evidence.legacy, j.evidence.devices));
    // the adoption table row and the coverage bar of each product
    for (const x of j.products) {
      expect(text).toMatch(
        new RegExp(
          `^\\s*${escape(x.product)}\\s+${escape(x.latest_release.version)} \\(${x.releases} ${x.releases === 1 ? 'release' : 'releases'}\\)\\s+\\S+\\s+${x.devices}\\s+${escape(share(x.on_latest, x.devices))}\\s+${escape(share(x.with_receipt, x.devices))}\\s*$`,
          'm',
        ),
      );
      expect(figure(text, `${x.product} on ${x.latest_release.version}`)).toBe(share(x.on_latest, x.devices));
    }
    // severity x age table
    expect(text).toMatch(new RegExp(`^\\s*critical\\s+${j.findings.by_severity.critical.join('\\s+')}\\s+2\\s*$`, 'm'));
    // cases and their clocks
    expect(text).toContain('Log4Shell in the gateway app');
    expect(text).toMatch(/early warning\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+overdue\s+overdue 6h 0m/);
    expect(text).toContain(`Data cut-off ${timeText(j.report.data_cutoff.at)}`);
    const page1 = renderPage(p.raw, 1, 60);
    expect(countColor(page1, BRANDING.accent_color)).toBeGreaterThan(2000);
  });

  it('each generation is audited with the SHA-256 and size of the bytes served (also sent as Repr-Digest)', async () => {
    const before = (await reportAudits()).total;
    const served: { kind: string; format: string; raw: Buffer; digest: string }[] = [];
    for (const [kind, format] of [
      ['vulnerability', 'pdf'],
      ['vulnerability', 'json'],
      ['readiness', 'pdf'],
      ['readiness', 'json'],
    ] as const) {
      const r = await get(`/api/v1/reports/${kind}.${format}?product=edge-gateway`);
      expect(r.status).toBe(200);
      served.push({ kind, format, raw: r.raw, digest: String(r.headers['repr-digest']) });
      expect(Number(r.headers['content-length'])).toBe(r.raw.length);
    }
    const audits = await reportAudits();
    expect(audits.total).toBe(before + 4);
    const newest = audits.events.slice(0, 4).reverse();
    newest.forEach((row: any, i: number) => {
      const s = served[i]!;
      expect(row).toMatchObject({ action: 'report.generate', target: `report:${s.kind}`, actor: expect.stringContaining('@'), credential: 'session' });
      expect(row.detail).toMatchObject({ format: s.format, sha256: sha256(s.raw), bytes: s.raw.length, product: 'edge-gateway' });
      expect(s.digest).toBe(`sha-256=:${createHash('sha256').update(s.raw).digest('base64')}:`);
    });
  });

  it.skipIf(!POPPLER)(
    'each PDF is PDF/A-3b with every font embedded and carries its JSON twin, served byte for byte by its digest; a report generated again differs only by the one audit event between them',
    async () => {
      for (const kind of ['vulnerability', 'readiness'] as const) {
        const p = await get(`/api/v1/reports/${kind}.pdf`);
        expect(p.status).toBe(200);
        const fonts = pdfFonts(p.raw);
        expect(fonts.length).toBeGreaterThan(0);
        for (const f of fonts) expect(f, `${kind}: ${f.name}`).toMatchObject({ embedded: true, subset: true });
        const info = pdfTool(p.raw, 'pdfinfo', ['-enc', 'UTF-8', '{}']);
        expect(info).toMatch(/^PDF version:\s+1\.7$/m);
        expect(info).toMatch(new RegExp(`^Author:\\s+${escape(BRANDING.company_name)}$`, 'm'));
        expect(info).toMatch(new RegExp(`^Title:\\s+${kind === 'vulnerability' ? 'Vulnerability' : 'Readiness'} report$`, 'm'));
        const xmp = pdfTool(p.raw, 'pdfinfo', ['-meta', '{}']);
        expect(xmp).toContain('<pdfaid:part>3</pdfaid:part>');
        expect(xmp).toContain('<pdfaid:conformance>B</pdfaid:conformance>');

        const twin = pdfAttachments(p.raw).get(`${kind}-report.json`);
        expect(twin, kind).toBeDefined();
        // the audit row of the PDF names its twin's digest
        const row = (await reportAudits()).events[0];
        expect(row.detail).toMatchObject({ format: 'pdf', sha256: sha256(p.raw), twin_sha256: sha256(twin!) });
        // the API serves the twin the PDF carries, byte for byte, by that digest
        const kept = await get(`/api/v1/reports/twins/${sha256(twin!)}`);
        expect(kept.status, kind).toBe(200);
        expect(kept.raw.equals(twin!), kind).toBe(true);

        // the API's twin, generated right after at the same instant, differs only by the PDF's own audit
        // event: the data cut-off's audit_seq (and, for the vulnerability report, the previous report)
        const j = await get(`/api/v1/reports/${kind}.json`);
        const [t, a] = [JSON.parse(twin!.toString('utf8')), j.json()];
        expect(BigInt(a.report.data_cutoff.audit_seq)).toBe(BigInt(t.report.data_cutoff.audit_seq) + 1n);
        let expected = twin!.toString('utf8').replace(JSON.stringify(t.report.data_cutoff), JSON.stringify(a.report.data_cutoff));
        if (kind === 'vulnerability') {
          expect(a.previous).toMatchObject({ format: 'pdf', audit_seq: a.report.data_cutoff.audit_seq, generated_at: t.report.generated_at });
          expect(a.previous.figures).toEqual({
            findings: t.summary.findings,
            open: t.summary.open,
            known_exploited_open: t.summary.known_exploited_open,
            exposed_devices: t.summary.exposed_devices,
            exposed_devices_known_exploited: t.summary.exposed_devices_known_exploited,
          });
          expected = expected.replace(`"previous":${JSON.stringify(t.previous)}`, `"previous":${JSON.stringify(a.previous)}`);
        }
        expect(Buffer.from(expected, 'utf8').equals(j.raw), kind).toBe(true);
      }
      // a digest no report of this tenant names, and one that is not a digest
      const unknown = await get(`/api/v1/reports/twins/sha256:${'0'.repeat(64)}`);
      expect(unknown.status).toBe(404);
      const malformed = await get('/api/v1/reports/twins/sha256:XYZ');
      expect(malformed.status).toBe(400);
      expect(malformed.json().error).toContain('params.digest');
    },
  );

  it.skipIf(!POPPLER)('the vulnerability report says what changed since the previous one', async () => {
    const before = (await get('/api/v1/reports/vulnerability.json')).json();
    const text = pdfToText((await get('/api/v1/reports/vulnerability.pdf')).raw).replace(/\s+/g, ' ');
    expect(text).toContain(`Since the previous report (`);
    expect(text).toContain(`findings ${before.summary.findings} (unchanged), open ${before.summary.open} (unchanged)`);
  });

  it('scope: a product narrows every figure to it; a severity narrows the findings listed, not the counts', async () => {
    const v = (await get('/api/v1/reports/vulnerability.json?product=edge-gateway')).json();
    const inProduct = (await api('GET', '/api/v1/findings?product=edge-gateway')).body;
    expect(v.report.scope).toEqual({ product: 'edge-gateway', severity: null });
    expect(v.summary.findings).toBe(inProduct.total);
    expect(v.products.map((p: any) => p.product)).toEqual(['edge-gateway']);
    expect(v.unreleased_artifacts).toEqual([]);
    const r = (await get('/api/v1/reports/readiness.json?product=sensor')).json();
    expect(r.evidence).toEqual({ devices: 1, receipt: 1, legacy: 0, none: 0, labels: { 'software-key': 1 } });
    expect(r.products.map((p: any) => p.product)).toEqual(['sensor']);
    expect(r.sboms).toMatchObject({ artifacts: 1, with_sbom: 0, running_without_sbom: { total: 1 } });
    expect(r.cases.counts.open).toBe(0);
    expect((await get('/api/v1/reports/readiness.json?product=edge-gateway')).json().cases.counts.open).toBe(1);

    const critical = (await get('/api/v1/reports/vulnerability.json?severity=critical')).json();
    const app1 = critical.products[0].artifacts[0];
    expect(app1.counts.total).toBe(3);
    expect(app1.findings.map((f: any) => f.severity)).toEqual(['critical', 'critical']);
    expect(critical.summary.findings).toBe(4);
  });

  it('bad input is a 400 naming the field, an unknown product a 404, a missing credential a 401; viewers read; nothing is audited for a refusal', async () => {
    const before = (await reportAudits()).total;
    for (const [url, field] of [
      ['/api/v1/reports/vulnerability.pdf?severity=severe', 'severity'],
      ['/api/v1/reports/vulnerability.json?product=Bad%20Product', 'product'],
      ['/api/v1/reports/readiness.pdf?severity=high', 'severity'],
      ['/api/v1/reports/readiness.json?format=pdf', 'format'],
      [`/api/v1/reports/readiness.json?product=${'p'.repeat(65)}`, 'product'],
      ['/api/v1/reports/vulnerability.json?product=a&product=b', 'product'],
    ] as const) {
      const r = await get(url);
      expect(r.status, `${url}: ${r.raw.toString()}`).toBe(400);
      expect(r.json().error, url).toContain(field);
    }
    for (const url of ['/api/v1/reports/vulnerability.pdf?product=no-such-product', '/api/v1/reports/readiness.json?product=no-such-product']) {
      const r = await get(url);
      expect(r.status).toBe(404);
      expect(r.json().error).toContain('no-such-product');
    }
    expect((await get('/api/v1/reports/annual.pdf')).status).toBe(404);
    expect((await w.f.t.app.inject({ method: 'GET', url: '/api/v1/reports/readiness.pdf' })).statusCode).toBe(401);
    expect((await reportAudits()).total).toBe(before);
    const viewer = await w.f.t.loginAs('viewer');
    const asViewer = await get('/api/v1/reports/readiness.json', viewer);
    expect(asViewer.status).toBe(200);
    expect(asViewer.json().evidence.devices).toBe(6);
  });

  it("tenants are isolated: another tenant's reports hold only its own fleet, and this tenant's products are unknown there", async () => {
    const other = await w.f.t.newTenant('other-co');
    const admin2 = await w.f.t.loginAs('admin', other);
    await w.f.device('z1', 'linux-arm64', other);
    const v = (await get('/api/v1/reports/vulnerability.json', admin2)).json();
    expect(v.report).toMatchObject({ tenant: { id: other, name: 'other-co' }, company: 'other-co' });
    expect(v.summary).toMatchObject({ findings: 0, exposed_devices: 0 });
    expect(v.products).toEqual([]);
    expect(v.unreleased_artifacts).toEqual([]);
    expect(v.known_exploited).toEqual([]);
    // feeds are global: one copy serves every tenant
    expect(v.freshness.advisories).toBe(4);
    const r = (await get('/api/v1/reports/readiness.json', admin2)).json();
    expect(r.evidence).toMatchObject({ devices: 1, receipt: 0, none: 1 });
    expect(r.fleet).toEqual({ online: 1, offline: 0, decommissioned: 0 });
    expect(r.sboms.artifacts).toBe(0);
    expect(r.keys.authorizer).toMatchObject({ active: 0, revoked: 0 });
    expect(r.cases.counts.open).toBe(0);
    expect((await get('/api/v1/reports/readiness.pdf?product=edge-gateway', admin2)).status).toBe(404);
    if (POPPLER) {
      const p = await get('/api/v1/reports/readiness.pdf', admin2);
      const text = pdfToText(p.raw);
      expect(text).toContain('other-co');
      expect(text).not.toContain(BRANDING.company_name);
      expect(countColor(renderPage(p.raw, 1, 60), BRANDING.accent_color)).toBe(0);
    }
    // the other tenant's generations are in its own audit trail only
    const mine = (await reportAudits()).total;
    await get('/api/v1/reports/vulnerability.json', admin2);
    expect((await reportAudits()).total).toBe(mine);
  });

  it('lists longer than a database page are complete and in order (JSON and PDF)', async () => {
    const count = REPORT_PAGE * 2 + 50;
    const names = Array.from({ length: count }, (_, i) => `pkg-${String(i).padStart(4, '0')}`);
    const record = osvRecord({
      id: 'GHSA-many-many-many',
      affected: names.map((n) => ({ ecosystem: 'npm', name: n, ranges: [{ type: 'SEMVER' as const, events: [{ introduced: '0' }, { fixed: '2.0.0' }] }] })),
      database_specific: { severity: 'HIGH' },
    });
    const imp = await w.f.t.app.inject({
      method: 'POST',
      url: '/api/v1/vuln-feeds/osv?source=osv%3Amany',
      headers: { ...w.f.admin, 'content-type': 'application/zip' },
      payload: osvZip([record]),
    });
    expect(imp.statusCode, imp.body).toBe(201);
    const big = (await w.f.upload({ name: 'big', version: '1.0.0', kind: 'config', bytes: 'big' })).body;
    const sbom = await w.f.t.app.inject({
      method: 'PUT',
      url: `/api/v1/artifacts/${big.id}/sbom`,
      headers: { ...w.f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
      payload: cyclonedx(names.map((n) => `pkg:npm/${n}@1.0.0`)),
    });
    expect(sbom.statusCode, sbom.body).toBe(200);
    const ids: string[] = [];
    for (let offset = 0; offset < count; offset += 200)
      ids.push(...(await api('GET', `/api/v1/artifacts/${big.id}/findings?limit=200&offset=${offset}`)).body.findings.map((f: any) => f.id));
    expect(ids).toHaveLength(count);
    const j = (await get('/api/v1/reports/vulnerability.json')).json();
    const section = j.unreleased_artifacts.find((a: any) => a.id === big.id);
    expect(section.counts).toMatchObject({ total: count, open: count, open_by_severity: { high: count } });
    expect(section.findings.map((f: any) => f.id)).toEqual(ids);
    if (POPPLER) {
      const text = pdfToText((await get('/api/v1/reports/vulnerability.pdf')).raw);
      const printed = [...text.matchAll(/^\s*GHSA-many-many-many\s+high\s+(pkg-\d{4}) 1\.0\.0/gm)].map((m) => m[1]);
      expect(printed).toEqual(j.unreleased_artifacts.find((a: any) => a.id === big.id).findings.map((f: any) => f.component.name));
      // the findings table's header is repeated on every page it continues on
      const pages = text.split('\f').filter((x) => x.includes('GHSA-many-many-many'));
      expect(pages.length).toBeGreaterThan(3);
      for (const page of pages) expect(page).toMatch(/Vulnerability\s+Severity\s+Component\s+VEX status\s+Fixed in\s+First seen/);
    }
  }, 120_000);
});

describe.each(availableDrivers())('reports of a large fleet on %s', (driver) => {
  const N = 20_000;
  let f: Awaited<ReturnType<typeof createReleaseFixture>>;
  beforeAll(async () => {
    f = await createReleaseFixture(driver);
    const db = f.t.testStore.store.db;
    const tenant = f.t.tenantId;
    const feed = osvRecord({
      id: 'GHSA-scal-eeee-test',
      aliases: ['CVE-2024-9999'],
      affected: [{ ecosystem: 'npm', name: 'left-pad', ranges: [{ type: 'SEMVER', events: [{ introduced: '0' }, { fixed: '1.3.0' }] }] }],
      database_specific: { severity: 'HIGH' },
    });
    expect(
      (
        await f.t.app.inject({
          method: 'POST',
          url: '/api/v1/vuln-feeds/osv?source=osv%3Anpm',
          headers: { ...f.admin, 'content-type': 'application/zip' },
          payload: osvZip([feed]),
        })
      ).statusCode,
    ).toBe(201);
    const app = (await f.upload({ name: 'app', version: '1.0.0', kind: 'config', bytes: 'app' })).body;
    expect(
      (
        await f.t.app.inject({
          method: 'PUT',
          url: `/api/v1/artifacts/${app.id}/sbom`,
          headers: { ...f.admin, 'content-type': 'application/vnd.cyclonedx+json' },
          payload: cyclonedx(['pkg:npm/left-pad@1.1.0']),
        })
      ).statusCode,
    ).toBe(200);
    await f.device('seed-1');
    const group = (await f.api('POST', '/api/v1/groups', { name: 'fleet', members: ['seed-1'] })).body;
    const auth = newAuthorizer();
    await f.api('POST', '/api/v1/authorizer-keys', { name: 'k', public_key_pem: auth.pem });
    expect(
      (
        await f.api('POST', '/api/v1/releases', {
          envelope: sign(releasePayload({ tenant, artifacts: [app], group }), auth.key),
          expected_product: 'edge-gateway',
        })
      ).status,
    ).toBe(201);
    const legacy = (await f.api('POST', '/api/v1/rollouts', { artifact_id: app.id, group_id: group.id })).body;
    // N devices reporting (legacy status) that they installed the artifact: the index triggers run as for real reports
    await sql`INSERT INTO devices (tenant_id, name, status, last_seen) SELECT ${tenant}, 'dev-' || lpad(i::text, 6, '0'), 'online', now() FROM generate_series(1, ${N}) AS i`.execute(
      db,
    );
    await sql`INSERT INTO legacy_status_reports (tenant_id, deployment_id, rollout_id, device_name, status, reported_at)
      SELECT ${tenant}, r.deployment_id, r.id, 'dev-' || lpad(i::text, 6, '0'), 'installed', now() FROM rollouts r, generate_series(1, ${N}) AS i WHERE r.id = ${legacy.id}`.execute(
      db,
    );
  }, 180_000);
  afterAll(async () => {
    await f?.dispose();
  });

  it(`aggregates ${N} devices in the database: the figures are exact and the report does not grow with the fleet`, async () => {
    const get = (url: string) => f.t.app.inject({ method: 'GET', url, headers: f.admin });
    const started = Date.now();
    const r = await get('/api/v1/reports/readiness.json');
    expect(r.statusCode, r.body).toBe(200);
    const j = JSON.parse(r.body);
    expect(j.evidence).toMatchObject({ devices: N + 1, receipt: 0, legacy: N, none: 1 });
    expect(j.products).toEqual([expect.objectContaining({ product: 'edge-gateway', devices: N, on_latest: N, with_receipt: 0 })]);
    expect(j.sboms.running_without_sbom.total).toBe(0);
    // no per-device list: the twin of a 20,000-device fleet stays a few kilobytes
    expect(r.rawPayload.length).toBeLessThan(16 * 1024);
    const v = await get('/api/v1/reports/vulnerability.json');
    expect(JSON.parse(v.body).summary).toMatchObject({ findings: 1, open: 1, exposed_devices: N });
    expect(JSON.parse(v.body).products[0].artifacts[0]).toMatchObject({ devices: N, counts: { open: 1 } });
    expect((await get('/api/v1/reports/readiness.pdf')).statusCode).toBe(200);
    console.log(`reports of ${N} devices on ${driver}: readiness + vulnerability JSON + readiness PDF in ${Date.now() - started} ms`);
  }, 120_000);
});
