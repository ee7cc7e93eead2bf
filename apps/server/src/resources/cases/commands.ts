/**
 * State changes of an Article 14 case. Each locks the case row, writes its append-only record
 * (awareness, decision, measure, request) and the case's current values, recomputes the
 * nearest deadline the list sorts on, and audits `case:<id>` in the same transaction.
 */
import { notFound, ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import { caseDeadlines, nextDue, type CaseKind, type CaseState } from './deadlines.js';
import { checkLinks, pastTime, type CaseLinks } from './fields.js';
import {
  deadlineFacts,
  getCase,
  getRelease,
  getRollout,
  insertAwareness,
  insertCase,
  insertDecision,
  insertIntermediateRequest,
  insertMeasure,
  listAwareness,
  listMeasures,
  lockCase,
  updateCase,
  type CasePatch,
  type CaseRow,
} from './queries.js';

export async function caseOr404(
  db: Db,
  tenantId: string,
  id: string,
  lookup: (db: Db, tenantId: string, id: string) => Promise<CaseRow | undefined> = lockCase,
): Promise<CaseRow> {
  const row = await lookup(db, tenantId, id);
  if (!row) throw notFound(`case ${id}`);
  return row;
}

/**
 * A record that belongs to a case (a submission, an attachment, a packet): 404 for the case
 * first, then `<what> <id>` when the case exists but holds no such record.
 */
export async function caseRecordOr404<R>(
  db: Db,
  tenantId: string,
  caseId: string,
  what: string,
  id: string,
  lookup: (db: Db, tenantId: string, caseId: string, id: string) => Promise<R | undefined>,
): Promise<R> {
  const c = await caseOr404(db, tenantId, caseId, getCase);
  const row = await lookup(db, tenantId, c.id, id);
  if (!row) throw notFound(`${what} ${id}`);
  return row;
}

/** Writes `patch` and the nearest deadline that follows from the case's facts after it. */
export async function saveCase(uow: UnitOfWork, c: CaseRow, patch: CasePatch): Promise<CaseRow> {
  const merged: CaseRow = { ...c, ...patch } as CaseRow;
  const next = nextDue(caseDeadlines(await deadlineFacts(uow.trx, uow.tenant, merged), uow.now));
  return updateCase(uow.trx, uow.tenant, c.id, { ...patch, next_due_at: next?.due_at ?? null, next_due_obligation: next?.obligation ?? null }, uow.now);
}

function requireState(c: CaseRow, allowed: readonly CaseState[], action: string): void {
  if (!allowed.includes(c.state as CaseState)) {
    throw new ServerError('CASE_STATE', `case ${c.id} is ${c.state}: cannot ${action} (possible when ${allowed.join(' or ')})`);
  }
}

export interface Awareness {
  aware_at: string;
  aware_by: string;
  evidence: string;
}

export interface OpenCaseInput extends CaseLinks {
  kind: CaseKind;
  title: string;
  summary: string;
  owner: string;
  awareness: Awareness;
}

/** POST /cases: the case (open) and its first awareness record; the clocks run from that awareness. */
export const openCase: Command<OpenCaseInput, CaseRow> = async (uow, input) => {
  const awareAt = pastTime('awareness.aware_at', input.awareness.aware_at, uow.now);
  const links = await checkLinks(uow.trx, uow.tenant, input);
  const inserted = await insertCase(uow.trx, {
    tenant_id: uow.tenant,
    kind: input.kind,
    state: 'open',
    title: input.title,
    summary: input.summary,
    owner: input.owner,
    ...links,
    aware_at: awareAt,
    created_by: uow.actor.name,
    created_at: uow.now,
    updated_at: uow.now,
  });
  await insertAwareness(uow.trx, {
    tenant_id: uow.tenant,
    case_id: inserted.id,
    aware_at: awareAt,
    aware_by: input.awareness.aware_by,
    evidence: input.awareness.evidence,
    reason: null,
    supersedes_id: null,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, inserted, {});
  await uow.audit({
    action: 'case.open',
    target: `case:${row.id}`,
    detail: { kind: row.kind, title: row.title, aware_at: awareAt.toISOString(), vulnerability_ids: row.vulnerability_ids, artifact_ids: row.artifact_ids },
  });
  return row;
};

export type CaseUpdate = Partial<Pick<OpenCaseInput, 'title' | 'summary' | 'owner' | keyof CaseLinks>>;

/** PATCH /cases/{id}: descriptive fields and links of a case that is not closed; each changed field audited with its old and new value. */
export const updateCaseFields: Command<{ id: string; update: CaseUpdate }, CaseRow> = async (uow, { id, update }) => {
  const c = await caseOr404(uow.trx, uow.tenant, id);
  requireState(c, ['open', 'reportable'], 'change it (reopen it first)');
  const links = await checkLinks(uow.trx, uow.tenant, {
    products: update.products ?? c.products,
    artifact_ids: update.artifact_ids ?? c.artifact_ids,
    vulnerability_ids: update.vulnerability_ids ?? c.vulnerability_ids,
    device_names: update.device_names ?? c.device_names,
    group_ids: update.group_ids ?? c.group_ids,
  });
  const patch: CasePatch = {};
  const changed: Record<string, { from: unknown; to: unknown }> = {};
  const candidates: CasePatch = { ...links };
  if (update.title !== undefined) candidates.title = update.title;
  if (update.summary !== undefined) candidates.summary = update.summary;
  if (update.owner !== undefined) candidates.owner = update.owner;
  for (const [k, v] of Object.entries(candidates) as [keyof CasePatch, unknown][]) {
    const before = c[k as keyof CaseRow];
    if (JSON.stringify(before) !== JSON.stringify(v)) {
      (patch as Record<string, unknown>)[k] = v;
      changed[k] = { from: before, to: v };
    }
  }
  if (Object.keys(patch).length === 0) return c;
  const row = await saveCase(uow, c, patch);
  await uow.audit({ action: 'case.update', target: `case:${c.id}`, detail: { changed } });
  return row;
};

/** POST /cases/{id}/awareness: a correction, recorded with its reason beside the record it supersedes; the clocks move with it. */
export const correctAwareness: Command<{ id: string; awareness: Awareness; reason: string }, CaseRow> = async (uow, { id, awareness, reason }) => {
  const c = await caseOr404(uow.trx, uow.tenant, id);
  const awareAt = pastTime('aware_at', awareness.aware_at, uow.now);
  const records = await listAwareness(uow.trx, uow.tenant, c.id);
  const current = records[records.length - 1]!;
  await insertAwareness(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    aware_at: awareAt,
    aware_by: awareness.aware_by,
    evidence: awareness.evidence,
    reason,
    supersedes_id: current.id,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, c, { aware_at: awareAt });
  await uow.audit({ action: 'case.awareness-correct', target: `case:${c.id}`, detail: { from: c.aware_at.toISOString(), to: awareAt.toISOString(), reason } });
  return row;
};

export interface AssessInput {
  id: string;
  outcome: 'reportable' | 'not_reportable';
  rationale: string;
  assessor?: string | undefined;
  assessed_at?: string | undefined;
}

/**
 * POST /cases/{id}/assessments: reportable (the case's obligations apply) or not reportable
 * (the case is closed and stays, with its rationale). An assessment cannot predate awareness.
 */
export const assessCase: Command<AssessInput, CaseRow> = async (uow, input) => {
  const c = await caseOr404(uow.trx, uow.tenant, input.id);
  requireState(c, ['open', 'reportable'], 'assess it (reopen it first)');
  const at = input.assessed_at === undefined ? uow.now : pastTime('assessed_at', input.assessed_at, uow.now);
  if (at < c.aware_at) throw new ServerError('CASE_INVALID', `assessed_at: ${at.toISOString()} is before awareness (${c.aware_at.toISOString()})`);
  await insertDecision(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    decision: input.outcome,
    rationale: input.rationale,
    decided_by: input.assessor ?? uow.actor.name,
    decided_at: at,
    from_state: c.state,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, c, { state: input.outcome });
  await uow.audit({
    action: 'case.assess',
    target: `case:${c.id}`,
    detail: { outcome: input.outcome, from: c.state, assessor: input.assessor ?? uow.actor.name, assessed_at: at.toISOString() },
  });
  return row;
};

/** POST /cases/{id}/reopen: a closed or not-reportable case is open again (to be reassessed), with the reason recorded. */
export const reopenCase: Command<{ id: string; reason: string }, CaseRow> = async (uow, { id, reason }) => {
  const c = await caseOr404(uow.trx, uow.tenant, id);
  requireState(c, ['not_reportable', 'closed'], 'reopen it');
  await insertDecision(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    decision: 'reopened',
    rationale: reason,
    decided_by: uow.actor.name,
    decided_at: uow.now,
    from_state: c.state,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, c, { state: 'open' });
  await uow.audit({ action: 'case.reopen', target: `case:${c.id}`, detail: { from: c.state, reason } });
  return row;
};

/** POST /cases/{id}/close: a reportable case whose final report has been filed. */
export const closeCase: Command<{ id: string; reason: string }, CaseRow> = async (uow, { id, reason }) => {
  const c = await caseOr404(uow.trx, uow.tenant, id);
  requireState(c, ['reportable'], 'close it');
  const facts = await deadlineFacts(uow.trx, uow.tenant, c);
  if (facts.firstFiled.final_report === undefined) throw new ServerError('CASE_STATE', `case ${c.id}: no final report has been filed yet`);
  await insertDecision(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    decision: 'closed',
    rationale: reason,
    decided_by: uow.actor.name,
    decided_at: uow.now,
    from_state: c.state,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, c, { state: 'closed' });
  await uow.audit({ action: 'case.close', target: `case:${c.id}`, detail: { reason } });
  return row;
};

export interface MeasureInput {
  id: string;
  available_at?: string | undefined;
  release_id?: string | undefined;
  rollout_id?: string | undefined;
  description: string;
  reason?: string | undefined;
}

/**
 * POST /cases/{id}/corrective-measure: the moment a corrective or mitigating measure became
 * available (the vulnerability final report is due 14 days later), optionally the published
 * release or the rollout that carries it. Without `available_at` the moment is the release's
 * publication (or the rollout's start), else now. Recording it again is a correction and needs
 * a reason.
 */
export const recordCorrectiveMeasure: Command<MeasureInput, CaseRow> = async (uow, input) => {
  const c = await caseOr404(uow.trx, uow.tenant, input.id);
  requireState(c, ['open', 'reportable'], 'record a corrective measure (reopen it first)');
  const previous = await listMeasures(uow.trx, uow.tenant, c.id);
  if (previous.length > 0 && (input.reason === undefined || input.reason.trim() === '')) {
    throw new ServerError('CASE_INVALID', 'reason: is required to correct the recorded corrective measure');
  }
  const rollout = input.rollout_id === undefined ? undefined : await getRollout(uow.trx, uow.tenant, input.rollout_id);
  if (input.rollout_id !== undefined && !rollout) throw new ServerError('CASE_INVALID', `rollout_id: no rollout ${input.rollout_id}`);
  const releaseId = input.release_id ?? rollout?.release_id ?? undefined;
  const release = releaseId === undefined ? undefined : await getRelease(uow.trx, uow.tenant, releaseId);
  if (releaseId !== undefined && !release) throw new ServerError('CASE_INVALID', `release_id: no release ${releaseId}`);
  if (rollout && release && rollout.release_id !== null && rollout.release_id !== release.id) {
    throw new ServerError('CASE_INVALID', `rollout_id: rollout ${rollout.id} deploys release ${rollout.release_id}, not ${release.id}`);
  }
  const availableAt =
    input.available_at !== undefined ? pastTime('available_at', input.available_at, uow.now) : (release?.created_at ?? rollout?.created_at ?? uow.now);
  await insertMeasure(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    available_at: availableAt,
    release_id: release?.id ?? null,
    rollout_id: rollout?.id ?? null,
    description: input.description,
    reason: previous.length > 0 ? input.reason! : null,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, c, { corrective_at: availableAt, corrective_release_id: release?.id ?? null, corrective_rollout_id: rollout?.id ?? null });
  await uow.audit({
    action: 'case.corrective-measure',
    target: `case:${c.id}`,
    detail: {
      available_at: availableAt.toISOString(),
      release_id: release?.id ?? null,
      rollout_id: rollout?.id ?? null,
      correction: previous.length > 0,
      ...(previous.length > 0 ? { reason: input.reason } : {}),
    },
  });
  return row;
};

export interface IntermediateRequestInput {
  id: string;
  requested_by: string;
  requested_at?: string | undefined;
  due_at: string;
  reference?: string | undefined;
}

/** POST /cases/{id}/intermediate-requests: a CSIRT asked for an intermediate report by `due_at`; a deadline of its own. */
export const requestIntermediateReport: Command<IntermediateRequestInput, { caseRow: CaseRow; requestId: string }> = async (uow, input) => {
  const c = await caseOr404(uow.trx, uow.tenant, input.id);
  requireState(c, ['open', 'reportable'], 'record an intermediate-report request');
  const requestedAt = input.requested_at === undefined ? uow.now : pastTime('requested_at', input.requested_at, uow.now);
  const dueAt = new Date(input.due_at);
  if (!(dueAt > requestedAt)) throw new ServerError('CASE_INVALID', `due_at: must be after requested_at (${requestedAt.toISOString()})`);
  const request = await insertIntermediateRequest(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    requested_by: input.requested_by,
    requested_at: requestedAt,
    due_at: dueAt,
    reference: input.reference ?? null,
    recorded_by: uow.actor.name,
    recorded_at: uow.now,
  });
  const row = await saveCase(uow, c, {});
  await uow.audit({
    action: 'case.intermediate-request',
    target: `case:${c.id}`,
    detail: { request_id: request.id, requested_by: input.requested_by, due_at: dueAt.toISOString() },
  });
  return { caseRow: row, requestId: request.id };
};
