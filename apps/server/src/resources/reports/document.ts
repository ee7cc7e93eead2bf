/**
 * What both reports share: their kinds and formats, the header of every report (tenant, company,
 * generation time, data cut-off, scope), the branding they are drawn with, the shape of a
 * finding in a report, and paging through a list in bounded batches.
 *
 * A report is a tree whose long lists are async iterables read page by page from the database:
 * the JSON writer (json.ts) and the PDF renderers walk it once, depth first, so memory holds
 * one page of rows at a time whatever the size of the fleet.
 */
import { reportBranding, type ReportBranding } from '../../reports/pdf.js';
import type { Db } from '../../store/tx.js';
import { brandingSettings } from '../case-submissions/queries.js';
import { latestAuditSeq, tenantName } from '../cases/queries.js';
import type { FindingListRow } from '../findings/queries.js';
import { SEVERITIES, type Severity } from '../vulnerabilities/severity.js';

export const REPORT_KINDS = ['vulnerability', 'readiness'] as const;
export type ReportKind = (typeof REPORT_KINDS)[number];

export const REPORT_FORMATS = ['pdf', 'json'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export const REPORT_TITLES: Record<ReportKind, string> = { vulnerability: 'Vulnerability report', readiness: 'Readiness report' };

export interface ReportScope {
  /** Only this product (its releases' artifacts, the devices that run them, its cases). */
  product?: string | undefined;
  /** Vulnerability report: list findings at or above this severity (counts stay complete). */
  severity?: Severity | undefined;
}

export interface ReportHeader {
  kind: ReportKind;
  /** The JSON twin's document type. */
  schema: string;
  tenant: { id: string; name: string };
  /** The company the branding names (the tenant name when none is set). */
  company: string;
  generated_at: string;
  /**
   * Every figure is read from one database snapshot taken when generation starts (`at`): the
   * data holds every change audited up to audit event `audit_seq` and none after.
   */
  data_cutoff: { at: string; audit_seq: string };
  scope: { product: string | null; severity: Severity | null };
}

/** The header and the branding of a report, read in the report's snapshot. */
export async function reportContext(
  db: Db,
  tenantId: string,
  kind: ReportKind,
  now: Date,
  scope: ReportScope,
): Promise<{ header: ReportHeader; branding: ReportBranding }> {
  const name = await tenantName(db, tenantId);
  const settings = await brandingSettings(db, tenantId);
  const auditSeq = await latestAuditSeq(db, tenantId);
  const branding = reportBranding(settings, name);
  return {
    branding,
    header: {
      kind,
      schema: `svc.report.${kind}.v1`,
      tenant: { id: tenantId, name },
      company: branding.name,
      generated_at: now.toISOString(),
      data_cutoff: { at: now.toISOString(), audit_seq: auditSeq },
      scope: { product: scope.product ?? null, severity: scope.severity ?? null },
    },
  };
}

/** Rows per database page while a report is written. */
export const REPORT_PAGE = 200;

/** The items of a list read `REPORT_PAGE` at a time (offsets are stable: the report reads one snapshot). */
export async function* paged<T>(fetch: (limit: number, offset: number) => Promise<readonly T[]>): AsyncGenerator<T> {
  for (let offset = 0; ; offset += REPORT_PAGE) {
    const rows = await fetch(REPORT_PAGE, offset);
    yield* rows;
    if (rows.length < REPORT_PAGE) return;
  }
}

/** Severity colours of the charts and tables. */
export const SEVERITY_COLORS: Record<Severity, string> = {
  critical: '#991b1b',
  high: '#dc2626',
  medium: '#d97706',
  low: '#2563eb',
  none: '#9ca3af',
  unknown: '#6b7280',
};

/** Every severity with a zero count, in order: the shape of the per-severity figures. */
export function bySeverity(counts: Readonly<Record<string, number>> = {}): Record<Severity, number> {
  return Object.fromEntries(SEVERITIES.map((s) => [s, counts[s] ?? 0])) as Record<Severity, number>;
}

export const isOpen = (vexStatus: string | null): boolean => vexStatus === null || vexStatus === 'affected' || vexStatus === 'under_investigation';

export interface ReportFinding {
  id: string;
  vulnerability: string;
  aliases: string[];
  summary: string | null;
  severity: string;
  cvss_score: number | null;
  /** The CVSS vector of the advisory the score came from (null when the feed gave none). */
  cvss_vector: string | null;
  known_exploited: boolean;
  kev_date_added: string | null;
  component: { purl: string; name: string; version: string | null };
  fixed_versions: string[];
  vex: { status: string | null; justification: string | null };
  open: boolean;
  first_seen_at: string;
}

/** A finding as the report prints it; `vectors` maps advisory ids to their CVSS vector (advisoryVectors). */
export function reportFinding(f: FindingListRow, vectors: ReadonlyMap<string, string> = new Map()): ReportFinding {
  return {
    id: f.id,
    vulnerability: f.vuln_key,
    aliases: f.aliases,
    summary: f.summary,
    severity: f.severity,
    cvss_score: f.cvss_score,
    cvss_vector: f.advisory_ids.map((id) => vectors.get(id)).find((v) => v !== undefined) ?? null,
    known_exploited: f.known_exploited,
    kev_date_added: f.kev_date_added,
    component: { purl: f.component_purl, name: f.component_name, version: f.component_version },
    fixed_versions: f.fixed_versions,
    vex: { status: f.vex_status, justification: f.vex_justification },
    open: isOpen(f.vex_status),
    first_seen_at: new Date(f.first_seen_at).toISOString(),
  };
}

/** `2026-10-01` of an ISO time (tables show dates; the JSON twin keeps the instant). */
export const day = (iso: string | null): string => (iso === null ? '-' : iso.slice(0, 10));
