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

export async function inventoryOf(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<InventoryComponent[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('sbom_components')
    .select(['artifact_id', 'purl', 'package_key', 'ecosystem', 'release', 'name', 'version'])
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', 'in', artifactIds)
    .orderBy('artifact_id')
    .orderBy('ordinal')
    .execute();
}

/** Advisories (not withdrawn) naming any of the keys, grouped by key. */
export async function advisoriesForKeys(db: Db, keys: readonly string[]): Promise<Map<string, CandidateAdvisory[]>> {
  const out = new Map<string, CandidateAdvisory[]>();
  const unique = [...new Set(keys)];
  for (let i = 0; i < unique.length; i += 5000) {
    const rows = await db
      .selectFrom('vuln_affected_packages as p')
      .innerJoin('vuln_advisories as a', 'a.id', 'p.advisory_id')
      .select(['p.package_key', 'a.id', 'a.vuln_key', 'a.aliases', 'a.summary', 'a.severity', 'a.severity_source', 'a.cvss_score', 'a.affected'])
      .where('p.package_key', 'in', unique.slice(i, i + 5000))
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
  for (let i = 0; i < cves.length; i += 5000) {
    const rows = await db
      .selectFrom('vuln_kev')
      .select(['cve_id', 'date_added'])
      .where('cve_id', 'in', cves.slice(i, i + 5000))
      .where('removed_at', 'is', null)
      .execute();
    for (const r of rows) out.set(r.cve_id, r.date_added);
  }
  return out;
}

export async function vexFor(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<VexStatement[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('vex_statements')
    .select(['id', 'artifact_id', 'vuln_id', 'component_purl', 'status', 'justification', 'statement_at', 'recorded_at'])
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', 'in', artifactIds)
    .execute();
}

export async function existingFindings(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<FindingRow[]> {
  if (artifactIds.length === 0) return [];
  return db.selectFrom('vuln_findings').selectAll().where('tenant_id', '=', tenantId).where('artifact_id', 'in', artifactIds).execute();
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
  matched_by: JSON.stringify(f.matched_by),
  known_exploited: f.known_exploited,
  kev_date_added: f.kev_date_added,
  vex_status: f.vex_status,
  vex_justification: f.vex_justification,
  vex_statement_id: f.vex_statement_id,
});

/** Inserts new findings and rewrites existing ones (by id); answers the ids of the inserted, in order. */
export async function writeFindings(
  db: Db,
  tenantId: string,
  inserts: FindingDraft[],
  updates: { id: string; draft: FindingDraft }[],
  now: Date,
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < inserts.length; i += 500) {
    const rows = inserts.slice(i, i + 500).map((f) => ({
      tenant_id: tenantId,
      artifact_id: f.artifact_id,
      vuln_key: f.vuln_key,
      component_purl: f.component_purl,
      ...draftColumns(f),
      first_seen_at: now,
      updated_at: now,
    }));
    const r = await db.insertInto('vuln_findings').values(rows).returning('id').execute();
    ids.push(...r.map((x) => x.id));
  }
  for (const u of updates)
    await db
      .updateTable('vuln_findings')
      .set({ ...draftColumns(u.draft), updated_at: now })
      .where('id', '=', u.id)
      .execute();
  return ids;
}

export async function deleteFindings(db: Db, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 1000)
    await db
      .deleteFrom('vuln_findings')
      .where('id', 'in', ids.slice(i, i + 1000))
      .execute();
}

/** How many non-decommissioned devices run each artifact (by its digest), for the given artifacts. */
export async function devicesRunning(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<Map<string, number>> {
  if (artifactIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('artifacts as a')
    .innerJoin('vuln_device_software as s', (j) => j.onRef('s.tenant_id', '=', 'a.tenant_id').onRef('s.digest', '=', 'a.digest'))
    .innerJoin('devices as d', (j) => j.onRef('d.tenant_id', '=', 's.tenant_id').onRef('d.name', '=', 's.device_name'))
    .select(['a.id', (eb) => eb.fn.count<string>('s.device_name').distinct().as('n')])
    .where('a.tenant_id', '=', tenantId)
    .where('a.id', 'in', artifactIds)
    .where('d.status', '<>', 'decommissioned')
    .groupBy('a.id')
    .execute();
  return new Map(rows.map((r) => [r.id, Number(r.n)]));
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
  if (artifactIds !== undefined) q = q.where('f.artifact_id', 'in', artifactIds);
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
  if (ids.length > 0) await db.updateTable('vuln_findings').set({ exploited_signal_at: now }).where('id', 'in', ids).execute();
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
