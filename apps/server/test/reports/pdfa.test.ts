/**
 * The archival and layout rules of every PDF the server draws (src/reports/pdf.ts), read back
 * with poppler as an auditor's tools would: fonts all embedded (`pdffonts`), PDF/A-3b
 * identification and metadata (`pdfinfo`, `pdfinfo -meta`), the JSON twin attached byte for byte
 * (`pdfdetach`), a company name in Polish, Greek, Chinese and "✓" through `pdftotext`; and the
 * layout rules on a vulnerability report of three pages or more with long identifiers, through the
 * rendered text positions (`pdftotext -bbox`): no heading last on a page, no identifier split
 * inside a table cell, the table header repeated on each page, "page N of M".
 *
 * The report is drawn by the real renderer (drawVulnerabilityReport) from a report tree made
 * here, so the layout is tested without a fleet; the HTTP suites (reports.test.ts,
 * resources/case-submissions/submissions.test.ts) check the same archival properties on served documents.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { requireTool } from '../../../../vitest.shared.js';
import { BrandedPdf, plural, reportBranding, timeText } from '../../src/reports/pdf.js';
import type { ReportHeader } from '../../src/resources/reports/document.js';
import { drawVulnerabilityReport } from '../../src/resources/reports/vulnerability-pdf.js';
import type { ArtifactFinding, VulnerabilityReport } from '../../src/resources/reports/vulnerability.js';
import { pdfAttachments, pdfFonts, pdfTextLines, pdfTool, pdfToText, type TextLine } from '../helpers/pdf.js';

const POPPLER = ['pdftotext', 'pdfinfo', 'pdffonts', 'pdfdetach'].every((t) => requireTool(t, 'poppler-utils'));

const COMPANY = 'Zakład Łódź ✓ Ελληνική Εταιρεία 東京精密 & <Co>';
const AT = new Date('2026-11-27T07:45:38.123Z');

// identifiers an auditor greps for: none may be split inside a table cell
const VERSION = '0.9.4-2+deb12u1';
const JUSTIFICATION = 'vulnerable_code_not_in_execute_path';
const GHSA = 'GHSA-xvch-5gv4-984h';

async function* list<T>(items: readonly T[]): AsyncGenerator<T> {
  yield* items;
}

function finding(i: number): ArtifactFinding {
  const closed = i % 3 === 0;
  return {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    vulnerability: i % 2 === 0 ? `CVE-2026-${10000 + i}` : GHSA,
    aliases: [`CVE-2026-${10000 + i}`, GHSA],
    summary: `Heap overflow in the parser of libfoo ${VERSION} when a record is longer than 65535 bytes (finding ${i})`,
    severity: i % 4 === 0 ? 'critical' : 'high',
    cvss_score: 9.8,
    cvss_vector: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H',
    known_exploited: i === 1,
    kev_date_added: i === 1 ? '2026-10-01' : null,
    component: { purl: `pkg:deb/debian/libfoo@${VERSION}?arch=amd64`, name: 'libfoo', version: VERSION },
    fixed_versions: [VERSION, '1.0.0-1'],
    vex: closed ? { status: 'not_affected', justification: JUSTIFICATION } : { status: null, justification: null },
    open: !closed,
    first_seen_at: '2026-10-02T03:04:05.678Z',
    fixed_by: closed ? [] : [{ product: 'edge-gateway', version: '2.0.0' }],
  };
}

function report(findings: number): VulnerabilityReport {
  const header: ReportHeader = {
    kind: 'vulnerability',
    schema: 'svc.report.vulnerability.v1',
    tenant: { id: 't', name: 'tenant' },
    company: COMPANY,
    generated_at: AT.toISOString(),
    data_cutoff: { at: AT.toISOString(), audit_seq: '42' },
    scope: { product: null, severity: null },
  };
  const bySeverity = {
    critical: { total: 2, open: 1 },
    high: { total: 3, open: 2 },
    medium: { total: 0, open: 0 },
    low: { total: 0, open: 0 },
    none: { total: 0, open: 0 },
    unknown: { total: 0, open: 0 },
  };
  const counts = {
    findings,
    open: findings - Math.ceil(findings / 3),
    closed: Math.ceil(findings / 3),
    known_exploited: 1,
    known_exploited_open: 1,
    by_severity: bySeverity,
    by_vex_status: { none: 2, affected: 0, under_investigation: 0, not_affected: 1, fixed: 0 },
  };
  return {
    report: header,
    freshness: {
      osv: [{ source: 'Debian', last_import_at: '2026-11-26T01:02:03.456Z', imports: 1 }],
      advisories: 1234,
      newest_advisory_modified_at: '2026-11-25T10:00:00.000Z',
      kev: { catalog_version: '2026.11.20', entries: 1, last_import_at: '2026-11-26T01:02:03.456Z' },
      analysis: { pending_runs: 0, latest_run: { state: 'completed', created_at: '2026-11-26T01:02:04.000Z', completed_at: '2026-11-26T01:02:09.000Z' } },
    },
    summary: { ...counts, artifacts_with_findings: 1, artifacts_with_open_findings: 1, exposed_devices: 3, exposed_devices_known_exploited: 1 },
    previous: {
      generated_at: '2026-11-20T07:00:00.000Z',
      audit_seq: '17',
      format: 'pdf',
      figures: { findings: findings - 2, open: counts.open - 1, known_exploited_open: 0, exposed_devices: 3, exposed_devices_known_exploited: 0 },
    },
    known_exploited: list([
      {
        ...finding(1),
        artifact: { id: 'a1', name: 'gateway-rootfs', version: VERSION, digest: `sha256:${'ab'.repeat(32)}` },
        devices: 3,
        fixed_by: [{ product: 'edge-gateway', version: '2.0.0' }],
      },
    ]),
    products: list([
      {
        product: 'edge-gateway',
        latest_release: { id: 'r1', version: '2.0.0', created_at: '2026-11-01T00:00:00.000Z' },
        releases: 1,
        summary: { ...counts, exposed_devices: 3, exposed_devices_known_exploited: 1 },
        artifacts: list([
          {
            id: 'a1',
            name: 'gateway-rootfs',
            version: VERSION,
            kind: 'rootfs',
            digest: `sha256:${'ab'.repeat(32)}`,
            sbom: true,
            releases: ['1.0.0', '2.0.0'],
            devices: 3,
            counts: {
              total: findings,
              open: counts.open,
              known_exploited: 1,
              open_by_severity: { critical: 1, high: 2, medium: 0, low: 0, none: 0, unknown: 0 },
            },
            findings: list(Array.from({ length: findings }, (_, i) => finding(i + 1))),
          },
        ]),
      },
    ]),
    unreleased_artifacts: list([]),
  };
}

async function draw(findings: number, twin: Buffer): Promise<Buffer> {
  const branding = reportBranding({ company_name: COMPANY, primary_color: '#111827', accent_color: '#7c3aed', logo_data_url: null }, 'tenant');
  const pdf = new BrandedPdf({ title: 'Vulnerability report', subtitle: COMPANY, branding, generatedAt: AT });
  await drawVulnerabilityReport(report(findings), pdf);
  pdf.attach({ name: 'vulnerability-report.json', bytes: twin, description: 'The JSON twin', at: AT });
  return pdf.bytes();
}

const HEADINGS = [
  'Executive summary',
  'Summary',
  'Data freshness',
  'Known exploited vulnerabilities',
  'Product edge-gateway',
  `gateway-rootfs ${VERSION} (rootfs)`,
  'Definitions',
];
const FOOTER = 70; // the bottom margin: the footer lives below it

describe.skipIf(!POPPLER)('archival PDFs (PDF/A-3b) and their layout', () => {
  const twin = Buffer.from(`${JSON.stringify({ report: { company: COMPANY }, note: 'twin ✓ 東京' })}\n`);
  let bytes: Buffer;
  let lines: TextLine[];
  let pages: { width: number; height: number }[];

  it('draws a vulnerability report of at least three pages', async () => {
    bytes = await draw(40, twin);
    if (process.env.SVC_PDF_SAMPLE !== undefined) writeFileSync(process.env.SVC_PDF_SAMPLE, bytes);
    ({ lines, pages } = pdfTextLines(bytes));
    expect(pages.length).toBeGreaterThanOrEqual(3);
  });

  it('embeds every font it uses (pdffonts), subset, with Unicode maps', () => {
    const fonts = pdfFonts(bytes);
    expect(fonts.map((f) => f.name.replace(/^[A-Z]{6}\+/, '')).sort()).toEqual([
      'DejaVuSans',
      'DejaVuSans-Bold',
      'DejaVuSansCondensed',
      'DejaVuSansCondensed-Bold',
      'NotoSansSC-Regular',
    ]);
    for (const f of fonts) expect(f, f.name).toMatchObject({ embedded: true, subset: true });
  });

  it('identifies itself as PDF/A-3b in PDF 1.7 with title, author and creation date in Info and XMP (pdfinfo)', () => {
    const info = pdfTool(bytes, 'pdfinfo', ['-enc', 'UTF-8', '{}']);
    expect(info).toMatch(/^PDF version:\s+1\.7$/m);
    expect(info).toMatch(/^Title:\s+Vulnerability report$/m);
    expect(info).toMatch(new RegExp(`^Author:\\s+${COMPANY.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    expect(info).toMatch(/^CreationDate:\s+Fri Nov 27 07:45:38 2026 UTC$/m);
    expect(info).toMatch(/^Metadata Stream:\s+yes$/m);
    const xmp = pdfTool(bytes, 'pdfinfo', ['-meta', '{}']);
    expect(xmp).toMatch(/<pdfaid:part>3<\/pdfaid:part>/);
    expect(xmp).toMatch(/<pdfaid:conformance>B<\/pdfaid:conformance>/);
    expect(xmp).toContain('<rdf:li xml:lang="x-default">Vulnerability report</rdf:li>');
    // the company name escaped: the XMP stays well-formed XML
    expect(xmp).toContain(
      `<dc:creator><rdf:Seq><rdf:li>${COMPANY.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</rdf:li></rdf:Seq></dc:creator>`,
    );
    expect(xmp).toContain('<xmp:CreateDate>2026-11-27T07:45:38Z</xmp:CreateDate>');
    // the sRGB output intent and the associated file are in the catalog
    const raw = bytes.toString('latin1');
    expect(raw).toMatch(/\/OutputIntents \[\d+ 0 R\]/);
    expect(raw).toContain('/S /GTS_PDFA1');
    expect(raw).toMatch(/\/AFRelationship \/Data/);
    expect(raw).toMatch(/\/AF \[\d+ 0 R\]/);
  });

  it('carries its JSON twin byte for byte (pdfdetach)', () => {
    const files = pdfAttachments(bytes);
    expect([...files.keys()]).toEqual(['vulnerability-report.json']);
    expect(files.get('vulnerability-report.json')!.equals(twin)).toBe(true);
  });

  it('prints a company name in Polish, Greek, Chinese and "✓" as it is (pdftotext)', () => {
    const text = pdfToText(bytes);
    const pageTexts = text.split('\f').filter((p) => p.trim() !== '');
    expect(pageTexts).toHaveLength(pages.length);
    for (const p of pageTexts) expect(p).toContain(COMPANY);
    expect(text).not.toContain('?');
    expect(text).not.toContain('\uFFFD');
  });

  it('has an outline (bookmarks) of its sections', () => {
    const raw = bytes.toString('latin1');
    expect(raw).toMatch(/\/Outlines \d+ 0 R/);
    // outline titles are PDF text strings: ASCII titles as written
    for (const h of ['Executive summary', 'Known exploited vulnerabilities', 'Definitions']) expect(raw).toContain(`/Title (${h})`);
  });

  it('is tagged: headings, paragraphs, tables (header cells TH) and charts (Figure) in reading order; page furniture is not content', async () => {
    expect(pdfTool(bytes, 'pdfinfo', ['{}'])).toMatch(/^Tagged:\s+yes$/m);
    // poppler reads the structure with its text slowly: a short report of the same renderer
    const short = await draw(4, twin);
    const tree = pdfTool(short, 'pdfinfo', ['-struct-text', '-enc', 'UTF-8', '{}']);
    const elements = [...tree.matchAll(/^\s*(\w+)(?: \(\w+\))?\n\s*"([^"]*)"/gm)].map((m) => [m[1]!, m[2]!]);
    const headings = elements.filter(([t]) => /^H\d$/.test(t!)).map(([t, text]) => `${t} ${text}`);
    expect(headings).toEqual(['H1 Vulnerability report', ...HEADINGS.map((h) => `${h.startsWith('gateway-rootfs') ? 'H3' : 'H2'} ${h}`)]);
    // every findings table: its first row the header cells, one TR per finding (the header repeated on later pages is an artifact)
    expect(tree).toMatch(/Table \(block\)\n\s+TR\n\s+TH\n\s+"Vulnerability"\n\s+TH\n\s+"Severity"/);
    expect((tree.match(/^\s+TH\n\s+"Vulnerability"$/gm) ?? []).length).toBe(2); // the known-exploited table and the artifact's
    expect(tree).toContain('Figure');
    // the page header and footer are artifacts: the company name is in the tree only where the content says it
    expect(tree).not.toContain('page 1 of');
  }, 120_000);

  it('"page N of M" on every page; times to the minute with their zone, no raw ISO instants', () => {
    pages.forEach((_, i) => {
      const footer = lines.filter((l) => l.page === i + 1 && l.yMin > pages[i]!.height - FOOTER);
      expect(footer.map((l) => l.text).join(' | ')).toContain(`page ${i + 1} of ${pages.length}`);
    });
    const text = lines.map((l) => l.text).join('\n');
    expect(text).toContain(`Generated ${timeText(AT)}`);
    expect(text).toContain('Times are UTC');
    expect(text).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
    expect(text).toContain(`2.0.0 (2026-11-01), ${plural(1, 'release')} in all`);
    expect(text).not.toMatch(/\(s\)|\b1 releases\b/);
  });

  it('never leaves a heading as the last thing on a page', () => {
    for (let p = 1; p <= pages.length; p++) {
      const body = lines.filter((l) => l.page === p && l.yMin > 80 && l.yMin < pages[p - 1]!.height - FOOTER);
      const last = body[body.length - 1]!;
      expect(HEADINGS, `last line of page ${p}: ${last.text}`).not.toContain(last.text);
    }
    // and each heading is followed, on its page, by its content
    for (const h of HEADINGS)
      expect(
        lines.some((l) => l.text === h),
        h,
      ).toBe(true);
  });

  it('never splits an identifier inside a table cell; the finding detail prints summary, CVSS vector, devices and fixing release', () => {
    const words = lines.flatMap((l) => l.words.map((w) => w.text.replace(/[,.;]$/, '')));
    // every finding prints its fixed-in version and component version: all of them whole
    expect(words.filter((w) => w === VERSION).length).toBeGreaterThanOrEqual(40 * 2);
    expect(lines.filter((l) => l.words.some((w) => w.text.startsWith('0.9.4') && w.text.replace(/[,.;]$/, '') !== VERSION)).map((l) => l.text)).toEqual([]);
    expect(words.filter((w) => w.startsWith('vulnerable_') && w !== JUSTIFICATION)).toEqual([]);
    expect(words.filter((w) => w === JUSTIFICATION).length).toBe(Math.floor(40 / 3));
    expect(words.filter((w) => w.startsWith('GHSA-') && w !== GHSA)).toEqual([]);
    // the detail wraps across the full width: read it as running text
    const text = lines.map((l) => l.text).join(' ');
    expect(text).toContain('CVSS 9.8 (CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H)');
    expect(text).toContain('Devices running the artifact: 3.');
    expect(text).toMatch(/Fixed in 0\.9\.4-2\+deb12u1, 1\.0\.0-1; fixed by release edge-gateway 2\.0\.0\./);
    expect(text).toContain('Heap overflow in the parser of libfoo');
  });

  it('repeats the table header at the top of each page the findings table continues on', () => {
    const header = /^Vulnerability Severity Component VEX status Fixed in First seen$/;
    const headerPages = lines.filter((l) => header.test(l.text)).map((l) => l.page);
    const findingPages = [...new Set(lines.filter((l) => /^(CVE-2026-\d+|GHSA-)/.test(l.text) && l.page > 1).map((l) => l.page))];
    expect(findingPages.length).toBeGreaterThanOrEqual(2);
    for (const p of findingPages) expect(headerPages, `page ${p}`).toContain(p);
    // on a continuation page the header is the first line of the body
    for (const p of findingPages.slice(1)) {
      const body = lines.filter((l) => l.page === p && l.yMin > 80 && l.yMin < pages[p - 1]!.height - FOOTER);
      expect(body[0]!.text, `page ${p}`).toMatch(header);
    }
  });

  it('says what changed since the previous report in the executive summary', () => {
    const text = pdfToText(bytes).replace(/\s+/g, ' ');
    expect(text).toContain(
      'Since the previous report (2026-11-20 07:00 UTC, audit event #17): findings 40 (+2), open 26 (+1), known exploited and open 1 (+1), exposed devices 3 (unchanged).',
    );
  });
});
