/**
 * Stage submissions and their filings: append-only in the database (migration 0020), read here.
 * A submission's `document` is the exact canonical JSON that was produced; its PDF lives in the
 * content-addressed blob store under `pdf_digest`. Every function is tenant-scoped.
 */
import { normalizeUuid } from '@svc/release-core';
import type { Insertable, Selectable } from 'kysely';
import type { CaseFilingsTable, CaseSrpPacketsTable, CaseSubmissionsTable } from '../../store/case-tables.js';
import type { Db } from '../../store/tx.js';

export type SubmissionRow = Selectable<CaseSubmissionsTable>;
export type FilingRow = Selectable<CaseFilingsTable>;
export type PacketRow = Selectable<CaseSrpPacketsTable>;
/** A packet without its document bytes (lists). */
export type PacketMeta = Omit<PacketRow, 'document' | 'seq'>;
/** A submission without its document bytes (lists). */
export type SubmissionMeta = Omit<SubmissionRow, 'document' | 'seq'>;

const META = ['id', 'tenant_id', 'case_id', 'stage', 'supersedes_id', 'request_id', 'digest', 'pdf_digest', 'pdf_length', 'created_by', 'created_at'] as const;

export async function insertSubmission(db: Db, row: Insertable<CaseSubmissionsTable>): Promise<SubmissionMeta> {
  return db.insertInto('case_submissions').values(row).returning(META).executeTakeFirstOrThrow();
}

export async function getSubmission(db: Db, tenantId: string, caseId: string, id: string): Promise<SubmissionRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('case_submissions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('case_id', '=', caseId)
    .where('id', '=', uuid)
    .executeTakeFirst();
}

/** The id of the submission that supersedes `id`, if any. */
export async function supersededBy(db: Db, tenantId: string, id: string): Promise<string | undefined> {
  const row = await db.selectFrom('case_submissions').select('id').where('tenant_id', '=', tenantId).where('supersedes_id', '=', id).executeTakeFirst();
  return row?.id;
}

export interface SubmissionFilter {
  stage?: string | undefined;
}

/** A case's submissions, oldest first, with the id of the correction that superseded each. */
export async function listSubmissions(
  db: Db,
  tenantId: string,
  caseId: string,
  f: SubmissionFilter,
  limit: number,
  offset: number,
): Promise<{ rows: (SubmissionMeta & { superseded_by: string | null })[]; total: number }> {
  let q = db.selectFrom('case_submissions as s').where('s.tenant_id', '=', tenantId).where('s.case_id', '=', caseId);
  if (f.stage !== undefined) q = q.where('s.stage', '=', f.stage);
  const [rows, total] = await Promise.all([
    q
      .leftJoin('case_submissions as n', 'n.supersedes_id', 's.id')
      .select(META.map((c) => `s.${c}` as const))
      .select('n.id as superseded_by')
      .orderBy('s.seq')
      .limit(limit)
      .offset(offset)
      .execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** spec §8 `counts`: the case's submissions by stage, whatever the filter. */
export async function submissionStageCounts(db: Db, tenantId: string, caseId: string): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('case_submissions')
    .select(['stage', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .where('case_id', '=', caseId)
    .groupBy('stage')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.stage, Number(r.n)]));
}

/** Every submission of a case with its document, oldest first (the case export: bounded by what a case files). */
export async function caseSubmissionsWithDocuments(db: Db, tenantId: string, caseId: string): Promise<SubmissionRow[]> {
  return db.selectFrom('case_submissions').selectAll().where('tenant_id', '=', tenantId).where('case_id', '=', caseId).orderBy('seq').execute();
}

/** The earlier submissions of a correction chain ending at `id` (oldest first), `id` included. */
export async function submissionChain(db: Db, tenantId: string, caseId: string, id: string): Promise<SubmissionMeta[]> {
  const rows = await db.selectFrom('case_submissions').select(META).where('tenant_id', '=', tenantId).where('case_id', '=', caseId).execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  const chain: SubmissionMeta[] = [];
  for (let cur = byId.get(id); cur !== undefined; cur = cur.supersedes_id === null ? undefined : byId.get(cur.supersedes_id)) chain.unshift(cur);
  return chain;
}

export async function insertFiling(db: Db, row: Insertable<CaseFilingsTable>): Promise<FilingRow> {
  return db.insertInto('case_filings').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listFilings(db: Db, tenantId: string, caseId: string, submissionId?: string): Promise<FilingRow[]> {
  let q = db.selectFrom('case_filings').selectAll().where('tenant_id', '=', tenantId).where('case_id', '=', caseId);
  if (submissionId !== undefined) q = q.where('submission_id', '=', submissionId);
  return q.orderBy('filed_at').orderBy('seq').execute();
}

/** Report branding settings of the tenant (admin branding), or undefined when never set. */
export async function brandingSettings(db: Db, tenantId: string) {
  return db
    .selectFrom('branding')
    .select(['company_name', 'primary_color', 'accent_color', 'logo_data_url'])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
}

const PACKET_META = ['id', 'tenant_id', 'case_id', 'stage', 'form_version', 'submission_id', 'digest', 'missing', 'created_by', 'created_at'] as const;

export async function insertPacket(db: Db, row: Insertable<CaseSrpPacketsTable>): Promise<PacketMeta> {
  return db.insertInto('case_srp_packets').values(row).returning(PACKET_META).executeTakeFirstOrThrow();
}

export async function getPacket(db: Db, tenantId: string, caseId: string, id: string): Promise<PacketRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('case_srp_packets')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('case_id', '=', caseId)
    .where('id', '=', uuid)
    .executeTakeFirst();
}

/** A case's reporting-platform packets, oldest first, and how many there are per stage (whatever the filter). */
export async function listPackets(
  db: Db,
  tenantId: string,
  caseId: string,
  stage: string | undefined,
  limit: number,
  offset: number,
): Promise<{ rows: PacketMeta[]; total: number; counts: Record<string, number> }> {
  let q = db.selectFrom('case_srp_packets').where('tenant_id', '=', tenantId).where('case_id', '=', caseId);
  const all = q;
  if (stage !== undefined) q = q.where('stage', '=', stage);
  const [rows, total, counts] = await Promise.all([
    q.select(PACKET_META).orderBy('seq').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
    all
      .select(['stage', (eb) => eb.fn.countAll<string>().as('n')])
      .groupBy('stage')
      .execute(),
  ]);
  return { rows, total: Number(total.n), counts: Object.fromEntries(counts.map((r) => [r.stage, Number(r.n)])) };
}

/** Every packet of a case with its document, oldest first (the case export). */
export async function casePacketsWithDocuments(db: Db, tenantId: string, caseId: string): Promise<PacketRow[]> {
  return db.selectFrom('case_srp_packets').selectAll().where('tenant_id', '=', tenantId).where('case_id', '=', caseId).orderBy('seq').execute();
}

/** The latest packet prepared from a submission, if any (what a platform transport would send with it). */
export async function latestPacketOf(db: Db, tenantId: string, submissionId: string): Promise<PacketRow | undefined> {
  return db
    .selectFrom('case_srp_packets')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('submission_id', '=', submissionId)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
}
