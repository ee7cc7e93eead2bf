/**
 * Generating a report is a read with a record: one unit of work reads every figure from one
 * database snapshot, writes the report (PDF or its JSON twin) to a private temporary file
 * while hashing it, and writes the `report.generate` audit row with the SHA-256 and size of
 * exactly those bytes. The route serves the file after the commit; a crash before the commit
 * leaves no audit row and serves nothing.
 */
import { BrandedPdf } from '../../reports/pdf.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import { REPORT_TITLES, reportContext, type ReportFormat, type ReportHeader, type ReportKind, type ReportScope } from './document.js';
import { ReportFile, type WrittenReport } from './file.js';
import { writeJson } from './json.js';
import { readFromOneSnapshot } from './queries.js';
import { drawReadinessReport } from './readiness-pdf.js';
import { readinessReport } from './readiness.js';
import { drawVulnerabilityReport } from './vulnerability-pdf.js';
import { vulnerabilityReport } from './vulnerability.js';

export interface GenerateReportInput {
  kind: ReportKind;
  format: ReportFormat;
  scope: ReportScope;
  /** Readiness: whether the tenant's root private key is on the server (null: unknown). */
  rootKeyOnServer: boolean | null;
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
async function build(uow: UnitOfWork, input: GenerateReportInput, header: ReportHeader): Promise<{ data: object; draw: (pdf: BrandedPdf) => Promise<void> }> {
  if (input.kind === 'vulnerability') {
    const r = await vulnerabilityReport(uow.trx, uow.tenant, header, input.scope);
    return { data: r, draw: (pdf) => drawVulnerabilityReport(r, pdf) };
  }
  const r = await readinessReport(uow.trx, uow.tenant, header, input.scope, uow.now, input.rootKeyOnServer);
  return { data: r, draw: (pdf) => drawReadinessReport(r, pdf) };
}

export const generateReport: Command<GenerateReportInput, GeneratedReport> = async (uow, input) => {
  await readFromOneSnapshot(uow.trx);
  const { kind, format, scope } = input;
  const { header, branding } = await reportContext(uow.trx, uow.tenant, kind, uow.now, scope);
  const report = await build(uow, input, header);

  const file = new ReportFile(format);
  let written: WrittenReport;
  try {
    if (format === 'json') {
      await writeJson(report.data, (chunk) => file.write(chunk));
      file.input.end();
    } else {
      const pdf = new BrandedPdf({
        title: REPORT_TITLES[kind],
        subtitle: `${branding.name}${scope.product === undefined ? '' : ` - product ${scope.product}`}`,
        branding,
        generatedAt: uow.now,
        dataCutoff: { at: uow.now, note: `one database snapshot; audit events up to #${header.data_cutoff.audit_seq}` },
      });
      pdf.pipe(file.input);
      await report.draw(pdf);
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
