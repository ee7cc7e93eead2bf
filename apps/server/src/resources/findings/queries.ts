/**
 * Findings (tenant-scoped, derived from the component index, the feeds and VEX): what the
 * analysis reads and writes, and the finding lists of the API (spec §8 pagination, counts by
 * severity over the filtered set).
 */
import { normalizeUuid } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { VulnFindingsTable } from '../../store/vuln-tables.js';
import type { Db } from '../../store/tx.js';
import type { StoredAffected } from '../vuln-feeds/osv.js';
import { SEVERITIES, SEVERITY_RANK, type Severity } from '../vulnerabilities/severity.js';
import { canonicalJson, type CandidateAdvisory, type FindingDraft, type InventoryComponent, type VexStatement } from './matching.js';

export type FindingRow = Selectable<VulnFindingsTable>;

/** `column = ANY($1)`: one array parameter for a list of any length (an `in` list binds one parameter per value). */
const anyOf = (column: string, values: readonly string[], type: 'uuid' | 'text') => sql<boolean>`${sql.ref(column)} = ANY(${values}::${sql.raw(type)}[])`;

export async function inventoryOf(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<InventoryComponent[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('sbom_components')
    .select(['artifact_id', 'purl', 'package_key', 'ecosystem', 'release', 'name', 'version'])
    .where('tenant_id', '=', tenantId)
    .where(anyOf('artifact_id', artifactIds, 'uuid'))
    .orderBy('artifact_id')
    .orderBy('ordinal')
    .execute();
}

/** Advisories (not withdrawn) naming any of the keys, grouped by key. */
export async function advisoriesForKeys(db: Db, keys: readonly string[]): Promise<Map<string, CandidateAdvisory[]>> {
  const out = new Map<string, CandidateAdvisory[]>();
  const unique = [...new Set(keys)];
  if (unique.length > 0) {
    const rows = await db
      .selectFrom('vuln_affected_packages as p')
      .innerJoin('vuln_advisories as a', 'a.id', 'p.advisory_id')
      .select(['p.package_key', 'a.id', 'a.vuln_key', 'a.aliases', 'a.summary', 'a.severity', 'a.severity_source', 'a.cvss_score', 'a.affected'])
      .where(anyOf('p.package_key', unique, 'text'))
      .where('a.withdrawn', 'is', null)
      .execute();
    for (const r of rows) {
      const list = out.get(r.package_key) ?? [];
      list.push({
        id: r.id,
        vuln_key: r.vuln_key,
        aliases: r.aliases,
        summary: r.summary,
        severity: r.severity,
        severity_source: r.severity_source,
        cvss_score: r.cvss_score,
        affected: r.affected as StoredAffected[],
      });
      out.set(r.package_key, list);
    }
  }
  return out;
}

/** KEV entries (not removed) among the ids: CVE -> date added. */
export async function kevFor(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  const cves = [...new Set(ids.filter((i) => i.startsWith('CVE-')))];
  const out = new Map<string, string>();
  if (cves.length === 0) return out;
  const rows = await db
    .selectFrom('vuln_kev')
    .select(['cve_id', 'date_added'])
    .where(anyOf('cve_id', cves, 'text'))
    .where('removed_at', 'is', null)
    .execute();
  for (const r of rows) out.set(r.cve_id, r.date_added);
  return out;
}

export async function vexFor(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<VexStatement[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('vex_statements')
    .select(['id', 'artifact_id', 'vuln_id', 'component_purl', 'status', 'justification', 'statement_at', 'recorded_at'])
    .where('tenant_id', '=', tenantId)
    .where(anyOf('artifact_id', artifactIds, 'uuid'))
    .execute();
}

export async function existingFindings(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<FindingRow[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('vuln_findings')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where(anyOf('artifact_id', artifactIds, 'uuid'))
    .execute();
}

/** The columns analysis writes, as they compare: a finding whose columns are equal is not rewritten. */
export function sameFinding(row: FindingRow, f: FindingDraft): boolean {
  const a = draftColumns(f);
  const b = draftColumns({
    ...f,
    component_name: row.component_name,
    component_version: row.component_version,
    ecosystem: row.ecosystem,
    advisory_ids: row.advisory_ids,
    aliases: row.aliases,
    summary: row.summary,
    severity: row.severity as FindingDraft['severity'],
    severity_rank: row.severity_rank,
    severity_source: row.severity_source,
    cvss_score: row.cvss_score,
    fixed_versions: row.fixed_versions,
    record_fixed_versions: row.record_fixed_versions,
    matched_by: row.matched_by as FindingDraft['matched_by'],
    known_exploited: row.known_exploited,
    kev_date_added: row.kev_date_added,
    vex_status: row.vex_status,
    vex_justification: row.vex_justification,
    vex_statement_id: row.vex_statement_id,
  });
  return canonicalJson({ ...a, matched_by: f.matched_by }) === canonicalJson({ ...b, matched_by: row.matched_by });
}

const draftColumns = (f: FindingDraft) => ({
  component_name: f.component_name,
  component_version: f.component_version,
  ecosystem: f.ecosystem,
  advisory_ids: f.advisory_ids,
  aliases: f.aliases,
  summary: f.summary,
  severity: f.severity,
  severity_rank: f.severity_rank,
  severity_source: f.severity_source,
  cvss_score: f.cvss_score,
  fixed_versions: f.fixed_versions,
  record_fixed_versions: f.record_fixed_versions,
  matched_by: JSON.stringify(f.matched_by),
  known_exploited: f.known_exploited,
  kev_date_added: f.kev_date_added,
  vex_status: f.vex_status,
  vex_justification: f.vex_justification,
  vex_statement_id: f.vex_statement_id,
});

/** The columns of `draftColumns` as `jsonb_to_recordset` reads them back. */
const DRAFT_RECORD = sql`x(artifact_id uuid, vuln_key text, component_purl text, component_name text, component_version text, ecosystem text,
  advisory_ids text[], aliases text[], summary text, severity text, severity_rank smallint, severity_source text, cvss_score real, fixed_versions text[],
  record_fixed_versions text[], matched_by jsonb, known_exploited boolean, kev_date_added text, vex_status text, vex_justification text, vex_statement_id uuid, id uuid)`;

const draftRecord = (f: FindingDraft, id?: string) => ({
  artifact_id: f.artifact_id,
  vuln_key: f.vuln_key,
  component_purl: f.component_purl,
  ...draftColumns(f),
  matched_by: f.matched_by,
  ...(id === undefined ? {} : { id }),
});

/**
 * Inserts new findings and rewrites existing ones (by id): one statement each however many
 * rows, the rows travelling as one JSON document (no per-row round trip, no bind parameter
 * per column and row).
 */
export async function writeFindings(
  db: Db,
  tenantId: string,
  inserts: FindingDraft[],
  updates: { id: string; draft: FindingDraft }[],
  now: Date,
): Promise<void> {
  if (inserts.length > 0)
    await sql`
      INSERT INTO vuln_findings (tenant_id, artifact_id, vuln_key, component_purl, component_name, component_version, ecosystem, advisory_ids, aliases, summary,
        severity, severity_rank, severity_source, cvss_score, fixed_versions, record_fixed_versions, matched_by, known_exploited, kev_date_added, vex_status,
        vex_justification, vex_statement_id, first_seen_at, updated_at)
      SELECT ${tenantId}::uuid, x.artifact_id, x.vuln_key, x.component_purl, x.component_name, x.component_version, x.ecosystem, x.advisory_ids, x.aliases,
        x.summary, x.severity, x.severity_rank, x.severity_source, x.cvss_score, x.fixed_versions, x.record_fixed_versions, x.matched_by, x.known_exploited, x.kev_date_added,
        x.vex_status, x.vex_justification, x.vex_statement_id, ${now}::timestamptz, ${now}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(inserts.map((f) => draftRecord(f)))}::jsonb) AS ${DRAFT_RECORD}`.execute(db);
  if (updates.length > 0)
    await sql`
      UPDATE vuln_findings f SET component_name = x.component_name, component_version = x.component_version, ecosystem = x.ecosystem,
        advisory_ids = x.advisory_ids, aliases = x.aliases, summary = x.summary, severity = x.severity, severity_rank = x.severity_rank,
        severity_source = x.severity_source, cvss_score = x.cvss_score, fixed_versions = x.fixed_versions,
        record_fixed_versions = x.record_fixed_versions, matched_by = x.matched_by,
        known_exploited = x.known_exploited, kev_date_added = x.kev_date_added, vex_status = x.vex_status, vex_justification = x.vex_justification,
        vex_statement_id = x.vex_statement_id, updated_at = ${now}::timestamptz
      FROM jsonb_to_recordset(${JSON.stringify(updates.map((u) => draftRecord(u.draft, u.id)))}::jsonb) AS ${DRAFT_RECORD}
      WHERE f.id = x.id AND f.tenant_id = ${tenantId}::uuid`.execute(db);
}

/** The ids among these advisories whose stored record is withdrawn. */
export async function withdrawnAdvisories(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('vuln_advisories')
    .select('id')
    .where(anyOf('id', [...new Set(ids)], 'text'))
    .where('withdrawn', 'is not', null)
    .execute();
  return new Set(rows.map((r) => r.id));
}

export async function deleteFindings(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length > 0)
    await db
      .deleteFrom('vuln_findings')
      .where(anyOf('id', ids, 'uuid'))
      .execute();
}

/**
 * How many non-decommissioned devices run each artifact (by its digest), for the given
 * artifacts: per artifact the digest index read in device order, duplicates (a device
 * running it in two components) dropped as they stream past; decommissioned devices are an
 * anti-join against the few of them, not a join with every device.
 */
export async function devicesRunning(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<Map<string, number>> {
  if (artifactIds.length === 0) return new Map();
  const r = await sql<{ id: string; n: string }>`
    SELECT a.id, x.n FROM artifacts a, LATERAL (
      SELECT count(*) AS n FROM (
        SELECT DISTINCT s.device_name FROM vuln_device_software s
        WHERE s.tenant_id = a.tenant_id AND s.digest = a.digest
          AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.tenant_id = s.tenant_id AND d.name = s.device_name AND d.status = 'decommissioned')) y) x
    WHERE a.tenant_id = ${tenantId} AND ${anyOf('a.id', artifactIds, 'uuid')} AND x.n > 0`.execute(db);
  return new Map(r.rows.map((x) => [x.id, Number(x.n)]));
}

/** Known-exploited findings without their signal yet whose artifact devices run now. */
export async function unsignalledExploited(
  db: Db,
  tenantId: string,
  limit: number,
  artifactIds?: readonly string[],
): Promise<Pick<FindingRow, 'id' | 'artifact_id' | 'vuln_key' | 'component_purl'>[]> {
  if (artifactIds !== undefined && artifactIds.length === 0) return [];
  let q = db.selectFrom('vuln_findings as f');
  if (artifactIds !== undefined) q = q.where(anyOf('f.artifact_id', artifactIds, 'uuid'));
  return q
    .innerJoin('artifacts as a', 'a.id', 'f.artifact_id')
    .select(['f.id', 'f.artifact_id', 'f.vuln_key', 'f.component_purl'])
    .where('f.tenant_id', '=', tenantId)
    .where('f.known_exploited', '=', true)
    .where('f.exploited_signal_at', 'is', null)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('vuln_device_software as s')
          .innerJoin('devices as d', (j) => j.onRef('d.tenant_id', '=', 's.tenant_id').onRef('d.name', '=', 's.device_name'))
          .select(sql<number>`1`.as('one'))
          .whereRef('s.tenant_id', '=', 'a.tenant_id')
          .whereRef('s.digest', '=', 'a.digest')
          .where('d.status', '<>', 'decommissioned'),
      ),
    )
    .orderBy('f.id')
    .limit(limit)
    .execute();
}

export async function setSignal(db: Db, ids: readonly string[], now: Date): Promise<void> {
  if (ids.length > 0)
    await db
      .updateTable('vuln_findings')
      .set({ exploited_signal_at: now })
      .where(anyOf('id', ids, 'uuid'))
      .execute();
}

export const VEX_STATUSES = ['not_affected', 'affected', 'fixed', 'under_investigation'] as const;

export interface FindingFilter {
  /** severity at or above */
  severity?: Severity | undefined;
  known_exploited?: boolean | undefined;
  /** a VEX status, or `none` (no statement) */
  vex_status?: string | undefined;
  /** only findings not closed by VEX (not not_affected, not fixed) */
  open?: boolean | undefined;
  artifact_id?: string | undefined;
  /** release product: findings of artifacts its releases name */
  product?: string | undefined;
  /** a vulnerability id or alias (CVE, GHSA, DSA...) */
  vuln?: string | undefined;
  /** artifacts a device runs now */
  device?: string | undefined;
}

function filtered(db: Db, tenantId: string, f: FindingFilter, withSeverity = true) {
  let q = db.selectFrom('vuln_findings as f').where('f.tenant_id', '=', tenantId);
  if (withSeverity && f.severity !== undefined) q = q.where('f.severity_rank', '>=', SEVERITY_RANK[f.severity]);
  if (f.known_exploited !== undefined) q = q.where('f.known_exploited', '=', f.known_exploited);
  if (f.vex_status === 'none') q = q.where('f.vex_status', 'is', null);
  else if (f.vex_status !== undefined) q = q.where('f.vex_status', '=', f.vex_status);
  if (f.open === true) q = q.where((eb) => eb.or([eb('f.vex_status', 'is', null), eb('f.vex_status', 'in', ['affected', 'under_investigation'])]));
  if (f.open === false) q = q.where('f.vex_status', 'in', ['not_affected', 'fixed']);
  if (f.artifact_id !== undefined) q = q.where('f.artifact_id', '=', f.artifact_id);
  if (f.product !== undefined) {
    const product = f.product;
    q = q.where('f.artifact_id', 'in', (eb) =>
      eb.selectFrom('vuln_release_artifacts').select('artifact_id').where('tenant_id', '=', tenantId).where('product', '=', product),
    );
  }
  if (f.vuln !== undefined) q = q.where(sql<boolean>`f.aliases @> ARRAY[${f.vuln}]::text[]`);
  if (f.device !== undefined) {
    const device = f.device;
    q = q.where('f.artifact_id', 'in', (eb) =>
      eb
        .selectFrom('vuln_device_software as s')
        .innerJoin('artifacts as a', (j) => j.onRef('a.tenant_id', '=', 's.tenant_id').onRef('a.digest', '=', 's.digest'))
        .select('a.id')
        .where('s.tenant_id', '=', tenantId)
        .where('s.device_name', '=', device),
    );
  }
  return q;
}

export type FindingListRow = FindingRow & { artifact_name: string; artifact_version: string; artifact_digest: string };

/** One page, known exploited first, then by severity; total and counts over the filtered set. */
export async function listFindings(
  db: Db,
  tenantId: string,
  f: FindingFilter,
  limit: number,
  offset: number,
): Promise<{ rows: FindingListRow[]; total: number; counts: Record<Severity, number> }> {
  const rows = await filtered(db, tenantId, f)
    .innerJoin('artifacts as a', 'a.id', 'f.artifact_id')
    .selectAll('f')
    .select(['a.name as artifact_name', 'a.version as artifact_version', 'a.digest as artifact_digest'])
    .orderBy('f.known_exploited', 'desc')
    .orderBy('f.severity_rank', 'desc')
    .orderBy('f.vuln_key')
    .orderBy('f.id')
    .limit(limit)
    .offset(offset)
    .execute();
  const bySeverity = await filtered(db, tenantId, f)
    .select(['f.severity', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('f.severity')
    .execute();
  const counts = Object.fromEntries(SEVERITIES.map((s) => [s, 0])) as Record<Severity, number>;
  let total = 0;
  for (const r of bySeverity) {
    if (r.severity in counts) counts[r.severity as Severity] = Number(r.n);
    total += Number(r.n);
  }
  return { rows, total, counts };
}

export async function getFinding(db: Db, tenantId: string, id: string): Promise<FindingListRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('vuln_findings as f')
    .innerJoin('artifacts as a', 'a.id', 'f.artifact_id')
    .selectAll('f')
    .select(['a.name as artifact_name', 'a.version as artifact_version', 'a.digest as artifact_digest'])
    .where('f.tenant_id', '=', tenantId)
    .where('f.id', '=', uuid)
    .executeTakeFirst();
}

/** How many of the artifact's findings now take their status from one of these statements. */
export async function findingsUsingStatements(db: Db, tenantId: string, artifactId: string, statementIds: readonly string[]): Promise<number> {
  if (statementIds.length === 0) return 0;
  const r = await db
    .selectFrom('vuln_findings')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', '=', artifactId)
    .where('vex_statement_id', 'in', statementIds)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
