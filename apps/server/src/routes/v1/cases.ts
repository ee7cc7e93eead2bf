import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Timestamp, Uuid } from '../../http/schemas.js';
import {
  assessCase,
  caseOr404,
  closeCase,
  correctAwareness,
  openCase,
  recordCorrectiveMeasure,
  reopenCase,
  requestIntermediateReport,
  updateCaseFields,
} from '../../resources/cases/commands.js';
import { CASE_KINDS, CASE_STATES } from '../../resources/cases/deadlines.js';
import { CASE_LIMITS } from '../../resources/cases/fields.js';
import { EVIDENCE_CAPS, linkedEvidence } from '../../resources/cases/evidence.js';
import { caseAuditPage, caseStateCounts, getCase, listCases, type CaseRow } from '../../resources/cases/queries.js';
import { caseRecords } from '../../resources/cases/records.js';
import { caseItemView, caseView } from '../../resources/cases/views.js';
import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { Finding } from '../../resources/findings/schemas.js';
import { CountedGroup, ExposedDevice, ExposureParts } from './vulnerabilities.js';

const ShortText = Type.String({ minLength: 1, maxLength: CASE_LIMITS.shortText });
const LongText = Type.String({ minLength: 1, maxLength: CASE_LIMITS.longText });
const Products = Type.Array(Type.String({ pattern: IDENTIFIER_PATTERNS.product.source }), {
  maxItems: CASE_LIMITS.products,
  description: 'product ids (contracts 2)',
});
const ArtifactIds = Type.Array(Uuid, { maxItems: CASE_LIMITS.artifacts });
const VulnerabilityIds = Type.Array(Type.String({ maxLength: 80 }), {
  maxItems: CASE_LIMITS.vulnerabilities,
  description: 'CVE, GHSA or OSV ids (aliases of one vulnerability may all be listed)',
});
const DeviceNames = Type.Array(Type.String({ pattern: IDENTIFIER_PATTERNS.deviceName.source }), { maxItems: CASE_LIMITS.devices });
const GroupIds = Type.Array(Uuid, { maxItems: CASE_LIMITS.groups });
const Awareness = Strict({
  aware_at: Type.String({ format: 'date-time', description: 'when the manufacturer became aware (UTC or with offset); never in the future' }),
  aware_by: ShortText,
  evidence: LongText,
});

const NextDeadline = Type.Union([
  Type.Object({ obligation: Type.Union([Type.String(), Type.Null()]), due_at: Timestamp, remaining_seconds: Type.Integer(), overdue: Type.Boolean() }),
  Type.Null(),
]);
const CaseItem = Type.Object({
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
const Record_ = Type.Record(Type.String(), Type.Unknown());
const LinkedEvidenceBody = Type.Object({
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
const CaseFull = Type.Intersect([
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
const Counts = Type.Object(
  Object.fromEntries(CASE_STATES.map((s) => [s, Type.Integer()])) as Record<(typeof CASE_STATES)[number], ReturnType<typeof Type.Integer>>,
  {
    description: "the tenant's cases by state, whatever the filter",
  },
);
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });
const ReasonBody = Strict({ reason: LongText });

/** Article 14 cases (docs/article-14.md): open, link, correct awareness, assess, reopen, close, corrective measure, intermediate requests. */
export const casesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const full = async (tenantId: string, c: CaseRow) => {
    const now = ctx.now();
    return caseView(c, await caseRecords(db, tenantId, c, now), now);
  };

  app.post(
    '/cases',
    {
      config: { permission: 'evidence.write', summary: 'Open an Article 14 case (kind, links, awareness); the clocks run from awareness' },
      schema: {
        body: Strict({
          kind: Type.Union(CASE_KINDS.map((k) => Type.Literal(k))),
          title: ShortText,
          summary: Type.Optional(Type.String({ maxLength: CASE_LIMITS.longText })),
          owner: ShortText,
          products: Type.Optional(Products),
          artifact_ids: Type.Optional(ArtifactIds),
          vulnerability_ids: Type.Optional(VulnerabilityIds),
          device_names: Type.Optional(DeviceNames),
          group_ids: Type.Optional(GroupIds),
          awareness: Awareness,
        }),
        response: { 201: CaseFull, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const row = await execute(ctx, request, openCase, {
        kind: b.kind,
        title: b.title,
        summary: b.summary ?? '',
        owner: b.owner,
        products: b.products ?? [],
        artifact_ids: b.artifact_ids ?? [],
        vulnerability_ids: b.vulnerability_ids ?? [],
        device_names: b.device_names ?? [],
        group_ids: b.group_ids ?? [],
        awareness: b.awareness,
      });
      return reply.code(201).send(await full(principalOf(request).tenantId, row));
    },
  );

  app.get(
    '/cases',
    {
      config: {
        permission: 'evidence.read',
        summary: 'List cases, nearest deadline first (filters: state, kind, product, overdue, due_within_hours; counts by state)',
      },
      schema: {
        querystring: Strict({
          ...PageQuery,
          state: Type.Optional(Type.Union(CASE_STATES.map((s) => Type.Literal(s)))),
          kind: Type.Optional(Type.Union(CASE_KINDS.map((k) => Type.Literal(k)))),
          product: Type.Optional(Type.String({ pattern: IDENTIFIER_PATTERNS.product.source })),
          overdue: Type.Optional(Type.Boolean({ description: 'true: a deadline is past due; false: none is' })),
          due_within_hours: Type.Optional(
            Type.Integer({ minimum: 0, maximum: 24 * 366, description: 'the nearest open deadline falls within the next N hours (not yet overdue)' }),
          ),
        }),
        response: { 200: PageOf('cases', CaseItem, Counts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'cases', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const q = request.query;
        const now = ctx.now();
        const { rows, total } = await listCases(
          snap,
          tenantId,
          { state: q.state, kind: q.kind, product: q.product, overdue: q.overdue, dueWithinHours: q.due_within_hours },
          now,
          limit,
          offset,
        );
        // spec §8: total counts the filtered set, counts break down the tenant's whole set by state
        return { items: rows.map((c) => caseItemView(c, now)), total, counts: await caseStateCounts(snap, tenantId) };
      }),
  );

  app.get(
    '/cases/:id',
    {
      config: { permission: 'evidence.read', summary: 'One case: awareness and its corrections, assessment, decisions, corrective measures, deadlines' },
      schema: { params: IdParams, response: { 200: CaseFull, ...ErrorResponses } },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      return full(tenantId, await caseOr404(db, tenantId, request.params.id, getCase));
    },
  );

  app.patch(
    '/cases/:id',
    {
      config: { permission: 'evidence.write', summary: 'Update title, summary, owner and links; 204, or 200 with Prefer: return=representation' },
      schema: {
        params: IdParams,
        body: Strict({
          title: Type.Optional(ShortText),
          summary: Type.Optional(Type.String({ maxLength: CASE_LIMITS.longText })),
          owner: Type.Optional(ShortText),
          products: Type.Optional(Products),
          artifact_ids: Type.Optional(ArtifactIds),
          vulnerability_ids: Type.Optional(VulnerabilityIds),
          device_names: Type.Optional(DeviceNames),
          group_ids: Type.Optional(GroupIds),
        }),
        response: { ...updateResponses(CaseFull), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const row = await execute(ctx, request, updateCaseFields, { id: request.params.id, update: request.body });
      return sendUpdated(request, reply, () => full(principalOf(request).tenantId, row));
    },
  );

  app.post(
    '/cases/:id/awareness',
    {
      config: { permission: 'evidence.write', summary: 'Correct the awareness moment (a new record with its reason; the clocks move with it)' },
      schema: {
        params: IdParams,
        body: Strict({ aware_at: Awareness.properties.aware_at, aware_by: ShortText, evidence: LongText, reason: LongText }),
        response: { 200: CaseFull, ...ErrorResponses },
      },
    },
    async (request) => {
      const { reason, ...awareness } = request.body;
      return full(principalOf(request).tenantId, await execute(ctx, request, correctAwareness, { id: request.params.id, awareness, reason }));
    },
  );

  app.post(
    '/cases/:id/assessments',
    {
      config: {
        permission: 'evidence.write',
        summary: 'Record the assessment: reportable, or not reportable (closes the case, which stays with its rationale)',
      },
      schema: {
        params: IdParams,
        body: Strict({
          outcome: Type.Union([Type.Literal('reportable'), Type.Literal('not_reportable')]),
          rationale: LongText,
          assessor: Type.Optional(ShortText),
          assessed_at: Type.Optional(Type.String({ format: 'date-time' })),
        }),
        response: { 200: CaseFull, ...ErrorResponses },
      },
    },
    async (request) => full(principalOf(request).tenantId, await execute(ctx, request, assessCase, { id: request.params.id, ...request.body })),
  );

  app.post(
    '/cases/:id/reopen',
    {
      config: { permission: 'evidence.write', summary: 'Reopen a closed or not-reportable case (reason recorded)' },
      schema: { params: IdParams, body: ReasonBody, response: { 200: CaseFull, ...ErrorResponses } },
    },
    async (request) => full(principalOf(request).tenantId, await execute(ctx, request, reopenCase, { id: request.params.id, reason: request.body.reason })),
  );

  app.post(
    '/cases/:id/close',
    {
      config: { permission: 'evidence.write', summary: 'Close a reportable case whose final report is filed (reason recorded)' },
      schema: { params: IdParams, body: ReasonBody, response: { 200: CaseFull, ...ErrorResponses } },
    },
    async (request) => full(principalOf(request).tenantId, await execute(ctx, request, closeCase, { id: request.params.id, reason: request.body.reason })),
  );

  app.post(
    '/cases/:id/corrective-measure',
    {
      config: {
        permission: 'evidence.write',
        summary: 'Record when a corrective or mitigating measure became available (release or rollout); the vulnerability final report is due 14 days later',
      },
      schema: {
        params: IdParams,
        body: Strict({
          available_at: Type.Optional(Type.String({ format: 'date-time' })),
          release_id: Type.Optional(Uuid),
          rollout_id: Type.Optional(Uuid),
          description: LongText,
          reason: Type.Optional(LongText),
        }),
        response: { 200: CaseFull, ...ErrorResponses },
      },
    },
    async (request) => full(principalOf(request).tenantId, await execute(ctx, request, recordCorrectiveMeasure, { id: request.params.id, ...request.body })),
  );

  app.post(
    '/cases/:id/intermediate-requests',
    {
      config: { permission: 'evidence.write', summary: 'Record a CSIRT request for an intermediate report (a deadline of its own)' },
      schema: {
        params: IdParams,
        body: Strict({
          requested_by: ShortText,
          requested_at: Type.Optional(Type.String({ format: 'date-time' })),
          due_at: Type.String({ format: 'date-time' }),
          reference: Type.Optional(ShortText),
        }),
        response: { 201: Type.Object({ request_id: Uuid, case: CaseFull }), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const { caseRow, requestId } = await execute(ctx, request, requestIntermediateReport, { id: request.params.id, ...request.body });
      return reply.code(201).send({ request_id: requestId, case: await full(principalOf(request).tenantId, caseRow) });
    },
  );

  app.get(
    '/cases/:id/findings',
    {
      config: {
        permission: 'evidence.read',
        summary: "Findings and fleet exposure of the case's vulnerability ids and artifacts, and the devices and groups they affect, read now",
      },
      schema: {
        params: IdParams,
        response: { 200: LinkedEvidenceBody, ...ErrorResponses },
      },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      const c = await caseOr404(db, tenantId, request.params.id, getCase);
      return linkedEvidence(db, tenantId, c);
    },
  );

  app.get(
    '/cases/:id/audit',
    {
      config: { permission: 'evidence.read', summary: "The case's audit-trail slice, oldest first (spec §8 pagination)" },
      schema: {
        params: IdParams,
        querystring: Strict(PageQuery),
        response: {
          200: PageOf(
            'events',
            Type.Object({
              id: Type.String(),
              at: Timestamp,
              actor: Type.String(),
              credential: Type.String(),
              action: Type.String(),
              target: Type.String(),
              request_id: Type.Union([Type.String(), Type.Null()]),
              detail: Record_,
            }),
            Type.Record(Type.String(), Type.Integer(), { description: "the case's audit events by action" }),
          ),
          ...ErrorResponses,
        },
      },
    },
    async (request) =>
      listPage(db, request.query, 'events', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const c = await caseOr404(snap, tenantId, request.params.id, getCase);
        const { rows, total, counts } = await caseAuditPage(snap, tenantId, c.id, limit, offset);
        return {
          items: rows.map((r) => ({
            id: r.id,
            at: iso(r.at),
            actor: r.actor,
            credential: r.credential,
            action: r.action,
            target: r.target,
            request_id: r.request_id,
            detail: r.detail,
          })),
          total,
          counts,
        };
      }),
  );
};
