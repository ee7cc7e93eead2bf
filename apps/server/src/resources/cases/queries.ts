/**
 * Article 14 cases: the case row, its append-only awareness records, decisions, corrective
 * measures and intermediate-report requests, the facts its clocks run from, the list, and the
 * reads of other areas' tables a case links to (artifacts, groups, devices, releases,
 * rollouts). Every function is tenant-scoped.
 */
import { normalizeUuid } from '@svc/release-core';
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { AuditEventsTable } from '../../store/core-tables.js';
import type { CaseAwarenessTable, CaseDecisionsTable, CaseIntermediateRequestsTable, CaseMeasuresTable, CasesTable } from '../../store/case-tables.js';
import type { Db } from '../../store/tx.js';
import type { FindingListRow } from '../findings/queries.js';
import type { CaseState, DeadlineFacts } from './deadlines.js';

export type CaseRow = Selectable<CasesTable>;
export type AwarenessRow = Selectable<CaseAwarenessTable>;
export type DecisionRow = Selectable<CaseDecisionsTable>;
export type MeasureRow = Selectable<CaseMeasuresTable>;
export type IntermediateRequestRow = Selectable<CaseIntermediateRequestsTable>;

export async function insertCase(db: Db, row: Insertable<CasesTable>): Promise<CaseRow> {
  return db.insertInto('cases').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function getCase(db: Db, tenantId: string, id: string): Promise<CaseRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db.selectFrom('cases').selectAll().where('tenant_id', '=', tenantId).where('id', '=', uuid).executeTakeFirst();
}

/** The case row locked for the rest of the transaction: every change to a case and its records runs under it. */
export async function lockCase(db: Db, tenantId: string, id: string): Promise<CaseRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db.selectFrom('cases').selectAll().where('tenant_id', '=', tenantId).where('id', '=', uuid).forUpdate().executeTakeFirst();
}

export type CasePatch = Partial<
  Pick<
    Updateable<CasesTable>,
    | 'title'
    | 'summary'
    | 'owner'
    | 'products'
    | 'artifact_ids'
    | 'vulnerability_ids'
    | 'device_names'
    | 'group_ids'
    | 'state'
    | 'aware_at'
    | 'corrective_at'
    | 'corrective_release_id'
    | 'corrective_rollout_id'
    | 'next_due_at'
    | 'next_due_obligation'
  >
>;

export async function updateCase(db: Db, tenantId: string, id: string, patch: CasePatch, now: Date): Promise<CaseRow> {
  return db
    .updateTable('cases')
    .set({ ...patch, updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function insertAwareness(db: Db, row: Insertable<CaseAwarenessTable>): Promise<AwarenessRow> {
  return db.insertInto('case_awareness').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Awareness records in the order they were written; the last one is in force. */
export async function listAwareness(db: Db, tenantId: string, caseId: string): Promise<AwarenessRow[]> {
  return db.selectFrom('case_awareness').selectAll().where('tenant_id', '=', tenantId).where('case_id', '=', caseId).orderBy('seq').execute();
}

export async function insertDecision(db: Db, row: Insertable<CaseDecisionsTable>): Promise<DecisionRow> {
  return db.insertInto('case_decisions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listDecisions(db: Db, tenantId: string, caseId: string): Promise<DecisionRow[]> {
  return db.selectFrom('case_decisions').selectAll().where('tenant_id', '=', tenantId).where('case_id', '=', caseId).orderBy('seq').execute();
}

export async function insertMeasure(db: Db, row: Insertable<CaseMeasuresTable>): Promise<MeasureRow> {
  return db.insertInto('case_measures').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listMeasures(db: Db, tenantId: string, caseId: string): Promise<MeasureRow[]> {
  return db.selectFrom('case_measures').selectAll().where('tenant_id', '=', tenantId).where('case_id', '=', caseId).orderBy('seq').execute();
}

export async function insertIntermediateRequest(db: Db, row: Insertable<CaseIntermediateRequestsTable>): Promise<IntermediateRequestRow> {
  return db.insertInto('case_intermediate_requests').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listIntermediateRequests(db: Db, tenantId: string, caseId: string): Promise<IntermediateRequestRow[]> {
  return db
    .selectFrom('case_intermediate_requests')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('case_id', '=', caseId)
    .orderBy('requested_at')
    .orderBy('seq')
    .execute();
}

export async function getIntermediateRequest(db: Db, tenantId: string, caseId: string, id: string): Promise<IntermediateRequestRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('case_intermediate_requests')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('case_id', '=', caseId)
    .where('id', '=', uuid)
    .executeTakeFirst();
}

/**
 * What the clocks of one case run from besides the case row: the earliest filing to the CSIRT
 * or ENISA of each stage, and for each intermediate request the earliest filing of an
 * intermediate report answering it. One round trip.
 */
export async function deadlineFacts(db: Db, tenantId: string, c: CaseRow): Promise<DeadlineFacts> {
  const filed = await db
    .selectFrom('case_filings as f')
    .innerJoin('case_submissions as s', 's.id', 'f.submission_id')
    .select(['s.stage', 's.request_id', (eb) => eb.fn.min('f.filed_at').as('first')])
    .where('f.tenant_id', '=', tenantId)
    .where('f.case_id', '=', c.id)
    .where(sql<boolean>`f.recipients && ARRAY['csirt', 'enisa']::text[]`)
    .groupBy(['s.stage', 's.request_id'])
    .execute();
  const requests = await listIntermediateRequests(db, tenantId, c.id);
  const firstFiled: DeadlineFacts['firstFiled'] = {};
  const answered = new Map<string, Date>();
  for (const r of filed) {
    const at = new Date(r.first);
    if (r.stage === 'intermediate' && r.request_id !== null) answered.set(r.request_id, at);
    else if (r.stage === 'early_warning' || r.stage === 'notification' || r.stage === 'final_report') {
      const prev = firstFiled[r.stage];
      if (prev === undefined || at < prev) firstFiled[r.stage] = at;
    }
  }
  return {
    kind: c.kind as DeadlineFacts['kind'],
    state: c.state as CaseState,
    awareAt: c.aware_at,
    correctiveAt: c.corrective_at,
    firstFiled,
    intermediateRequests: requests.map((r) => ({ id: r.id, dueAt: r.due_at, metAt: answered.get(r.id) ?? null })),
  };
}

export interface CaseFilter {
  state?: CaseState | undefined;
  kind?: string | undefined;
  product?: string | undefined;
  /** true: only cases with a deadline past due; false: only cases without one. */
  overdue?: boolean | undefined;
  /** Cases whose nearest open deadline falls in [now, now + hours]. */
  dueWithinHours?: number | undefined;
}

/**
 * spec §8: a page of the tenant's cases, nearest open deadline first (cases without one last,
 * newest first among them), and `total` of the filtered set. `next_due_at` is kept by every
 * command from deadlines.ts, so the filters and the order are one index walk.
 */
export async function listCases(
  db: Db,
  tenantId: string,
  f: CaseFilter,
  now: Date,
  limit: number,
  offset: number,
): Promise<{ rows: CaseRow[]; total: number }> {
  let q = db.selectFrom('cases').where('tenant_id', '=', tenantId);
  if (f.state !== undefined) q = q.where('state', '=', f.state);
  if (f.kind !== undefined) q = q.where('kind', '=', f.kind);
  if (f.product !== undefined) q = q.where(sql<boolean>`products @> ARRAY[${f.product}]::text[]`);
  if (f.overdue === true) q = q.where('next_due_at', '<', now);
  if (f.overdue === false) q = q.where((eb) => eb.or([eb('next_due_at', 'is', null), eb('next_due_at', '>=', now)]));
  if (f.dueWithinHours !== undefined) q = q.where('next_due_at', '>=', now).where('next_due_at', '<=', new Date(now.getTime() + f.dueWithinHours * 3600_000));
  const [rows, total] = await Promise.all([
    q
      .selectAll()
      .orderBy(sql`next_due_at ASC NULLS LAST`)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(limit)
      .offset(offset)
      .execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** spec §8 `counts`: the tenant's cases by state, whatever the filter. */
export async function caseStateCounts(db: Db, tenantId: string): Promise<Record<CaseState, number>> {
  const rows = await db
    .selectFrom('cases')
    .select(['state', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('state')
    .execute();
  const counts: Record<CaseState, number> = { open: 0, reportable: 0, not_reportable: 0, closed: 0 };
  for (const r of rows) if (r.state in counts) counts[r.state as CaseState] = Number(r.n);
  return counts;
}

/** The ids among `ids` that are artifacts of the tenant, with what a case document shows of them. */
export async function artifactsByIds(db: Db, tenantId: string, ids: readonly string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('artifacts')
    .select(['id', 'name', 'version', 'kind', 'digest', 'length', 'filename', 'media_type'])
    .where('tenant_id', '=', tenantId)
    .where(
      'id',
      'in',
      ids.flatMap((id) => normalizeUuid(id) ?? []),
    )
    .orderBy('name')
    .orderBy('version')
    .execute();
}

export async function existingGroupIds(db: Db, tenantId: string, ids: readonly string[]): Promise<Set<string>> {
  const valid = ids.flatMap((id) => normalizeUuid(id) ?? []);
  if (valid.length === 0) return new Set();
  const rows = await db.selectFrom('device_groups').select('id').where('tenant_id', '=', tenantId).where('id', 'in', valid).execute();
  return new Set(rows.map((r) => r.id));
}

export async function existingDevices(db: Db, tenantId: string, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await db
    .selectFrom('devices')
    .select('name')
    .where('tenant_id', '=', tenantId)
    .where('name', 'in', [...names])
    .execute();
  return new Set(rows.map((r) => r.name));
}

export async function getRelease(db: Db, tenantId: string, id: string) {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('releases')
    .select(['id', 'product', 'version', 'envelope_digest', 'payload_digest', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', uuid)
    .executeTakeFirst();
}

/** The files a release installs (the artifacts its payload names, from the index a trigger on releases keeps), by name and version. */
export async function releaseArtifacts(db: Db, tenantId: string, releaseId: string) {
  return db
    .selectFrom('vuln_release_artifacts as r')
    .innerJoin('artifacts as a', (j) => j.onRef('a.id', '=', 'r.artifact_id').onRef('a.tenant_id', '=', 'r.tenant_id'))
    .select(['a.name', 'a.version', 'a.digest', 'a.filename'])
    .where('r.tenant_id', '=', tenantId)
    .where('r.release_id', '=', releaseId)
    .orderBy('a.name')
    .orderBy('a.version')
    .execute();
}

export async function getRollout(db: Db, tenantId: string, id: string) {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('rollouts')
    .select(['id', 'deployment_id', 'release_id', 'artifact_id', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', uuid)
    .executeTakeFirst();
}

export async function tenantName(db: Db, tenantId: string): Promise<string> {
  const row = await db.selectFrom('tenants').select('name').where('id', '=', tenantId).executeTakeFirst();
  return row?.name ?? '';
}

/**
 * The tenant's findings naming any of the ids (a finding's aliases hold every id of its merged
 * records, so a CVE finds the finding of its GHSA record), known exploited and most severe
 * first, at most `limit`, and how many there are.
 */
export async function findingsNaming(db: Db, tenantId: string, ids: readonly string[], limit: number): Promise<{ rows: FindingListRow[]; total: number }> {
  if (ids.length === 0) return { rows: [], total: 0 };
  const naming = sql<boolean>`f.aliases && ARRAY[${sql.join([...ids])}]::text[]`;
  const [rows, total] = await Promise.all([
    db
      .selectFrom('vuln_findings as f')
      .innerJoin('artifacts as a', 'a.id', 'f.artifact_id')
      .selectAll('f')
      .select(['a.name as artifact_name', 'a.version as artifact_version', 'a.digest as artifact_digest'])
      .where('f.tenant_id', '=', tenantId)
      .where(naming)
      .orderBy('f.known_exploited', 'desc')
      .orderBy('f.severity_rank', 'desc')
      .orderBy('f.vuln_key')
      .orderBy('a.name')
      .orderBy('a.version')
      .orderBy('f.id')
      .limit(limit)
      .execute(),
    db
      .selectFrom('vuln_findings as f')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('f.tenant_id', '=', tenantId)
      .where(naming)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

export type AuditSliceRow = Pick<Selectable<AuditEventsTable>, (typeof AUDIT_COLUMNS)[number]>;

const AUDIT_COLUMNS = ['id', 'seq', 'at', 'actor', 'credential', 'action', 'target', 'request_id', 'detail'] as const;

/** The audit-trail slice of a case (every case command audits `case:<id>`), oldest first, one page. */
export async function caseAuditPage(
  db: Db,
  tenantId: string,
  caseId: string,
  limit: number,
  offset: number,
): Promise<{ rows: AuditSliceRow[]; total: number; counts: Record<string, number> }> {
  const target = `case:${caseId}`;
  const base = db.selectFrom('audit_events').where('tenant_id', '=', tenantId).where('target', '=', target);
  const [rows, byAction] = await Promise.all([
    base.select(AUDIT_COLUMNS).orderBy('seq').limit(limit).offset(offset).execute(),
    base
      .select(['action', (eb) => eb.fn.countAll<string>().as('n')])
      .groupBy('action')
      .orderBy('action')
      .execute(),
  ]);
  const counts = Object.fromEntries(byAction.map((r) => [r.action, Number(r.n)]));
  return { rows: rows, total: Object.values(counts).reduce((a, b) => a + b, 0), counts };
}

/** The slice in keyset batches up to `maxSeq` (the export's cut-off): memory stays flat. */
export async function* iterateCaseAudit(db: Db, tenantId: string, caseId: string, maxSeq: string, batch = 1000): AsyncGenerator<AuditSliceRow[]> {
  let after = '0';
  for (;;) {
    const rows = await db
      .selectFrom('audit_events')
      .select(AUDIT_COLUMNS)
      .where('tenant_id', '=', tenantId)
      .where('target', '=', `case:${caseId}`)
      .where('seq', '>', after)
      .where('seq', '<=', maxSeq)
      .orderBy('seq')
      .limit(batch)
      .execute();
    if (rows.length > 0) yield rows;
    if (rows.length < batch) return;
    after = String(rows[rows.length - 1]!.seq);
  }
}

/** The newest audit sequence number of the tenant: an export reads the trail up to it. */
export async function latestAuditSeq(db: Db, tenantId: string): Promise<string> {
  const row = await db
    .selectFrom('audit_events')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row?.seq === null || row?.seq === undefined ? '0' : String(row.seq);
}
