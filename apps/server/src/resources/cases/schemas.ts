/**
 * The JSON shapes of Article 14 cases, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { Finding } from '../findings/schemas.js';
import { CountedGroup, ExposedDevice, ExposureParts } from '../vulnerabilities/schemas.js';
import { CASE_STATES } from './deadlines.js';
import { EVIDENCE_CAPS } from './evidence.js';

const NextDeadline = Type.Union([
  Type.Object({ obligation: Type.Union([Type.String(), Type.Null()]), due_at: Timestamp, remaining_seconds: Type.Integer(), overdue: Type.Boolean() }),
  Type.Null(),
]);

export const CaseItem = Type.Object({
  id: Uuid,
  kind: Type.String(),
  state: Type.String(),
  title: Type.String(),
  summary: Type.String(),
  owner: Type.String(),
  products: Type.Array(Type.String()),
  artifact_ids: Type.Array(Type.String()),
  vulnerability_ids: Type.Array(Type.String()),
  device_names: Type.Array(Type.String()),
  group_ids: Type.Array(Type.String()),
  aware_at: Timestamp,
  corrective_measure_at: Type.Union([Timestamp, Type.Null()]),
  corrective_release_id: Type.Union([Type.String(), Type.Null()]),
  corrective_rollout_id: Type.Union([Type.String(), Type.Null()]),
  next_deadline: NextDeadline,
  created_by: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type CaseItemView = Static<typeof CaseItem>;

const Deadline = Type.Object({
  obligation: Type.String(),
  request_id: Type.Union([Type.String(), Type.Null()]),
  article: Type.String(),
  due_at: Type.Union([Timestamp, Type.Null()]),
  basis: Type.String(),
  waiting_for: Type.Union([Type.String(), Type.Null()]),
  met_at: Type.Union([Timestamp, Type.Null()]),
  status: Type.String(),
  remaining_seconds: Type.Union([Type.Integer(), Type.Null()]),
  overdue: Type.Boolean(),
});
export type DeadlineView = Static<typeof Deadline>;

const Record_ = Type.Record(Type.String(), Type.Unknown());

export const LinkedEvidenceBody = Type.Object({
  vulnerability_ids: Type.Array(Type.String()),
  vulnerabilities: Type.Array(
    Type.Object({
      id: Type.String({ description: "one of the case's vulnerability ids" }),
      vulnerability: Type.Union([Type.String(), Type.Null()], { description: 'the vulnerability it resolves to in the imported feeds (null: none names it)' }),
      known_exploited: Type.Boolean(),
    }),
  ),
  findings: Type.Array(Finding, { description: `findings naming any of the ids, known exploited and most severe first (at most ${EVIDENCE_CAPS.findings})` }),
  findings_total: Type.Integer(),
  exposure: Type.Array(
    Type.Object({
      ...ExposureParts,
      devices: Type.Integer({ description: 'exposed devices (running an artifact with an open finding of it)' }),
    }),
  ),
  artifacts: Type.Array(
    Type.Object(
      { id: Type.String(), name: Type.String(), version: Type.String(), digest: Type.String(), devices: Type.Integer() },
      { description: 'an artifact the case names, and how many devices run it' },
    ),
  ),
  affected: Type.Object({
    devices: Type.Array(ExposedDevice, { description: `by name, at most ${EVIDENCE_CAPS.devices}` }),
    devices_total: Type.Integer({ description: 'devices running an artifact with an open finding of a linked vulnerability, or an artifact the case names' }),
    groups: Type.Array(CountedGroup),
  }),
});
export type LinkedEvidenceView = Static<typeof LinkedEvidenceBody>;

const NullableText = Type.Union([Type.String(), Type.Null()]);

const AwarenessFields = {
  id: Uuid,
  aware_at: Timestamp,
  aware_by: Type.String(),
  evidence: Type.String(),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'why a correction was made; null on the first record' }),
  supersedes_id: Type.Union([Uuid, Type.Null()]),
  recorded_by: Type.String(),
  recorded_at: Timestamp,
};

export const CaseFull = Type.Intersect([
  CaseItem,
  Type.Object({
    awareness: Type.Union([Type.Object({ ...AwarenessFields, corrections: Type.Integer() }), Type.Null()], { description: 'the awareness record in force' }),
    awareness_history: Type.Array(Type.Object(AwarenessFields)),
    assessment: Type.Union([Type.Object({ outcome: Type.String(), rationale: Type.String(), assessor: Type.String(), assessed_at: Timestamp }), Type.Null()]),
    decisions: Type.Array(
      Type.Object({
        id: Uuid,
        decision: Type.String(),
        rationale: Type.String(),
        decided_by: Type.String(),
        decided_at: Timestamp,
        from_state: Type.String(),
        recorded_by: Type.String(),
        recorded_at: Timestamp,
      }),
    ),
    corrective_measures: Type.Array(
      Type.Object({
        id: Uuid,
        available_at: Timestamp,
        release_id: NullableText,
        rollout_id: NullableText,
        description: Type.String(),
        reason: NullableText,
        recorded_by: Type.String(),
        recorded_at: Timestamp,
      }),
    ),
    intermediate_requests: Type.Array(
      Type.Object({
        id: Uuid,
        requested_by: Type.String(),
        requested_at: Timestamp,
        due_at: Timestamp,
        reference: NullableText,
        recorded_by: Type.String(),
        recorded_at: Timestamp,
      }),
    ),
    deadlines: Type.Array(Deadline),
  }),
]);
export type CaseView = Static<typeof CaseFull>;

export const CaseCounts = Type.Object(
  Object.fromEntries(CASE_STATES.map((s) => [s, Type.Integer()])) as Record<(typeof CASE_STATES)[number], ReturnType<typeof Type.Integer>>,
  {
    description: "the tenant's cases by state, whatever the filter",
  },
);

/** One audit event of a case (its own trail, without the tenant). */
export const CaseAuditEvent = Type.Object({
  id: Type.String(),
  at: Timestamp,
  actor: Type.String(),
  credential: Type.String(),
  action: Type.String(),
  target: Type.String(),
  request_id: Type.Union([Type.String(), Type.Null()]),
  detail: Record_,
});

/** A recorded intermediate request and the case after it. */
export const IntermediateRequestRecorded = Type.Object({ request_id: Uuid, case: CaseFull });
