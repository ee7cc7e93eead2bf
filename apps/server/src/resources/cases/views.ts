/** A case as the API shows it (schemas.ts): the list item and the full view with its records and clocks. */
import { iso } from '../../http/schemas.js';
import { ACTIVE_STATES, type CaseState, type Deadline } from './deadlines.js';
import type { AwarenessRow, CaseRow, DecisionRow, IntermediateRequestRow, MeasureRow } from './queries.js';
import type { CaseItemView, CaseView, DeadlineView } from './schemas.js';

export function deadlineView(d: Deadline): DeadlineView {
  return {
    obligation: d.obligation,
    request_id: d.request_id,
    article: d.article,
    due_at: iso(d.due_at),
    basis: d.basis,
    waiting_for: d.waiting_for,
    met_at: iso(d.met_at),
    status: d.status,
    remaining_seconds: d.remaining_ms === null ? null : Math.trunc(d.remaining_ms / 1000),
    overdue: d.overdue,
  };
}

/** The fields every case answer carries; the nearest deadline read from the stored column (list items). */
export function caseItemView(c: CaseRow, now: Date): CaseItemView {
  const active = ACTIVE_STATES.includes(c.state as CaseState);
  const due = active ? c.next_due_at : null;
  return {
    id: c.id,
    kind: c.kind,
    state: c.state,
    title: c.title,
    summary: c.summary,
    owner: c.owner,
    products: c.products,
    artifact_ids: c.artifact_ids,
    vulnerability_ids: c.vulnerability_ids,
    device_names: c.device_names,
    group_ids: c.group_ids,
    aware_at: iso(c.aware_at),
    corrective_measure_at: iso(c.corrective_at),
    corrective_release_id: c.corrective_release_id,
    corrective_rollout_id: c.corrective_rollout_id,
    next_deadline:
      due === null
        ? null
        : {
            obligation: c.next_due_obligation,
            due_at: iso(due),
            remaining_seconds: Math.trunc((due.getTime() - now.getTime()) / 1000),
            overdue: now.getTime() > due.getTime(),
          },
    created_by: c.created_by,
    created_at: iso(c.created_at),
    updated_at: iso(c.updated_at),
  };
}

export function awarenessView(a: AwarenessRow) {
  return {
    id: a.id,
    aware_at: iso(a.aware_at),
    aware_by: a.aware_by,
    evidence: a.evidence,
    reason: a.reason,
    supersedes_id: a.supersedes_id,
    recorded_by: a.recorded_by,
    recorded_at: iso(a.recorded_at),
  };
}

export function decisionView(d: DecisionRow) {
  return {
    id: d.id,
    decision: d.decision,
    rationale: d.rationale,
    decided_by: d.decided_by,
    decided_at: iso(d.decided_at),
    from_state: d.from_state,
    recorded_by: d.recorded_by,
    recorded_at: iso(d.recorded_at),
  };
}

export function measureView(m: MeasureRow) {
  return {
    id: m.id,
    available_at: iso(m.available_at),
    release_id: m.release_id,
    rollout_id: m.rollout_id,
    description: m.description,
    reason: m.reason,
    recorded_by: m.recorded_by,
    recorded_at: iso(m.recorded_at),
  };
}

export function intermediateRequestView(r: IntermediateRequestRow) {
  return {
    id: r.id,
    requested_by: r.requested_by,
    requested_at: iso(r.requested_at),
    due_at: iso(r.due_at),
    reference: r.reference,
    recorded_by: r.recorded_by,
    recorded_at: iso(r.recorded_at),
  };
}

export interface CaseRecords {
  awareness: AwarenessRow[];
  decisions: DecisionRow[];
  measures: MeasureRow[];
  requests: IntermediateRequestRow[];
  deadlines: Deadline[];
}

/** GET /cases/{id}: the case, awareness in force with its corrections, the assessment in force, every decision, and the clocks at `now`. */
export function caseView(c: CaseRow, r: CaseRecords, now: Date): CaseView {
  const current = r.awareness[r.awareness.length - 1];
  const assessment = [...r.decisions].reverse().find((d) => d.decision === 'reportable' || d.decision === 'not_reportable');
  return {
    ...caseItemView(c, now),
    awareness: current === undefined ? null : { ...awarenessView(current), corrections: r.awareness.length - 1 },
    awareness_history: r.awareness.map(awarenessView),
    assessment:
      assessment === undefined
        ? null
        : { outcome: assessment.decision, rationale: assessment.rationale, assessor: assessment.decided_by, assessed_at: iso(assessment.decided_at) },
    decisions: r.decisions.map(decisionView),
    corrective_measures: r.measures.map(measureView),
    intermediate_requests: r.requests.map(intermediateRequestView),
    deadlines: r.deadlines.map(deadlineView),
  };
}
