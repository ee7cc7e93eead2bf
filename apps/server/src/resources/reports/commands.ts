/**
 * Generating a report is a read with a record: one unit of work reads every figure from one
 * database snapshot, writes the report (PDF or its JSON twin) to a private temporary file
 * while hashing it, and writes the `report.generate` audit row with the SHA-256 and size of
 * exactly those bytes. The route serves the file after the commit; a crash before the commit
 * leaves no audit row and serves nothing.
 *
 * A PDF carries its JSON twin (an associated file, docs/reports.md): the twin is written first
 * to its own temporary file, then the report tree is read a second time from the same snapshot
 * (the tree's lists are read once each) to draw the pages, and the twin's bytes are attached.
 * The audit row of a PDF records the twin's SHA-256 beside the PDF's; the row of a vulnerability
 * report records its headline figures, which the next report compares with (`previous`).
 */
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { BlobStore } from '../../blobs/index.js';
import { BrandedPdf } from '../../reports/pdf.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import { REPORT_TITLES, reportContext, type ReportFormat, type ReportHeader, type ReportKind, type ReportScope } from './document.js';
import { ReportFile, type WrittenReport } from './file.js';
import { writeJson } from './json.js';
import { readFromOneSnapshot } from './queries.js';
import { drawReadinessReport } from './readiness-pdf.js';
import { readinessReport } from './readiness.js';
import type { ReportFigures } from './queries.js';
import { drawVulnerabilityReport } from './vulnerability-pdf.js';
import { vulnerabilityReport } from './vulnerability.js';

export interface GenerateReportInput {
  kind: ReportKind;
  format: ReportFormat;
  scope: ReportScope;
  /** Readiness: whether the tenant's root private key is on the server (null: unknown). */
  rootKeyOnServer: boolean | null;
  /**
   * Where a PDF's JSON twin is kept, by its digest, so `GET /reports/twins/{digest}` serves the
   * very bytes the PDF carries (a report generated again a moment later differs: its data
   * cut-off counts the first one's audit row).
   */
  twins?: BlobStore;
}

export interface GeneratedReport extends WrittenReport {
  kind: ReportKind;
  format: ReportFormat;
  contentType: string;
  filename: string;
  generatedAt: Date;
}

const CONTENT_TYPES: Record<ReportFormat, string> = { pdf: 'application/pdf', json: 'application/json; charset=utf-8' };

/** The report's tree (the JSON twin) and how to draw it. */
async function build(
  uow: UnitOfWork,
  input: GenerateReportInput,
  header: ReportHeader,
): Promise<{ data: object; figures?: ReportFigures; draw: (pdf: BrandedPdf) => Promise<void> }> {
  if (input.kind === 'vulnerability') {
    const r = await vulnerabilityReport(uow.trx, uow.tenant, header, input.scope);
    const s = r.summary;
    return {
      data: r,
      figures: {
        findings: s.findings,
        open: s.open,
        known_exploited_open: s.known_exploited_open,
        exposed_devices: s.exposed_devices,
        exposed_devices_known_exploited: s.exposed_devices_known_exploited,
      },
      draw: (pdf) => drawVulnerabilityReport(r, pdf),
    };
  }
  const r = await readinessReport(uow.trx, uow.tenant, header, input.scope, uow.now, input.rootKeyOnServer);
  return { data: r, draw: (pdf) => drawReadinessReport(r, pdf) };
}

/** The JSON twin's bytes: written through a temporary report file (the same writer as the JSON format), then read back. */
async function twinBytes(data: object): Promise<{ bytes: Buffer; sha256: string }> {
  const file = new ReportFile('json');
  try {
    await writeJson(data, (chunk) => file.write(chunk));
    file.input.end();
    const written = await file.finished();
    return { bytes: await readFile(written.path), sha256: written.sha256 };
  } finally {
    await file.discard();
  }
}

export const generateReport: Command<GenerateReportInput, GeneratedReport> = async (uow, input) => {
  await readFromOneSnapshot(uow.trx);
  const { kind, format, scope } = input;
  const { header, branding } = await reportContext(uow.trx, uow.tenant, kind, uow.now, scope);
  const report = await build(uow, input, header);

  const file = new ReportFile(format);
  let written: WrittenReport;
  let twinSha256: string | undefined;
  try {
    if (format === 'json') {
      await writeJson(report.data, (chunk) => file.write(chunk));
      file.input.end();
    } else {
      const twin = await twinBytes(report.data);
      twinSha256 = twin.sha256;
      if (input.twins !== undefined) await input.twins.put(Readable.from([twin.bytes]));
      const pdf = new BrandedPdf({
        title: REPORT_TITLES[kind],
        subtitle: `${branding.name}${scope.product === undefined ? '' : ` - product ${scope.product}`}`,
        subject: `${REPORT_TITLES[kind]} of ${branding.name} (${header.schema}; the JSON twin is attached)`,
        branding,
        generatedAt: uow.now,
        dataCutoff: { at: uow.now, note: `one database snapshot; audit events up to #${header.data_cutoff.audit_seq}` },
      });
      pdf.pipe(file.input);
      // the twin was read from the tree: draw from a second reading of the same snapshot
      const again = await build(uow, input, header);
      await again.draw(pdf);
      pdf.attach({
        name: `${kind}-report.json`,
        bytes: twin.bytes,
        description: `The JSON twin of this report (${header.schema}): the data the pages show, with exact instants`,
        at: uow.now,
      });
      pdf.end();
    }
    written = await file.finished();
  } catch (e) {
    await file.discard();
    throw e;
  }
  try {
    await uow.audit({
      action: 'report.generate',
      target: `report:${kind}`,
      detail: {
        format,
        sha256: written.sha256,
        bytes: written.bytes,
        data_cutoff: header.data_cutoff.at,
        audit_seq: header.data_cutoff.audit_seq,
        ...(twinSha256 === undefined ? {} : { twin_sha256: twinSha256 }),
        ...(report.figures === undefined ? {} : { figures: report.figures }),
        ...(scope.product === undefined ? {} : { product: scope.product }),
        ...(scope.severity === undefined ? {} : { severity: scope.severity }),
      },
    });
  } catch (e) {
    await file.discard();
    throw e;
  }
  const stamp = uow.now.toISOString().replace(/[:.]/g, '');
  return {
    ...written,
    kind,
    format,
    contentType: CONTENT_TYPES[format],
    filename: `${kind}-report${scope.product === undefined ? '' : `-${scope.product}`}-${stamp}.${format}`,
    generatedAt: uow.now,
  };
};
