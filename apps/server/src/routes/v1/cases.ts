import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
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
import { linkedEvidence } from '../../resources/cases/evidence.js';
import { caseAuditPage, caseStateCounts, getCase, listCases, type CaseRow } from '../../resources/cases/queries.js';
import { caseRecords } from '../../resources/cases/records.js';
import { caseItemView, caseView } from '../../resources/cases/views.js';
import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { CaseAuditEvent, CaseCounts, CaseFull, CaseItem, IntermediateRequestRecorded, LinkedEvidenceBody } from '../../resources/cases/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const ShortText = Type.String({ minLength: 1, maxLength: SERVER_LIMITS.cases.shortText });
const LongText = Type.String({ minLength: 1, maxLength: SERVER_LIMITS.cases.longText });
const Products = Type.Array(Type.String({ pattern: IDENTIFIER_PATTERNS.product.source }), {
  maxItems: SERVER_LIMITS.cases.products,
  description: 'product ids (contracts 2)',
});
const ArtifactIds = Type.Array(Uuid, { maxItems: SERVER_LIMITS.cases.artifacts });
const VulnerabilityIds = Type.Array(Type.String({ maxLength: 80 }), {
  maxItems: SERVER_LIMITS.cases.vulnerabilities,
  description: 'CVE, GHSA or OSV ids (aliases of one vulnerability may all be listed)',
});
const DeviceNames = Type.Array(Type.String({ pattern: IDENTIFIER_PATTERNS.deviceName.source }), { maxItems: SERVER_LIMITS.cases.devices });
const GroupIds = Type.Array(Uuid, { maxItems: SERVER_LIMITS.cases.groups });
const Awareness = Strict({
  aware_at: Type.String({ format: 'date-time', description: 'when the manufacturer became aware (UTC or with offset); never in the future' }),
  aware_by: ShortText,
  evidence: LongText,
});

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
          summary: Type.Optional(Type.String({ maxLength: SERVER_LIMITS.cases.longText })),
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
        response: { 200: PageOf('cases', CaseItem, CaseCounts), ...ErrorResponses },
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
          summary: Type.Optional(Type.String({ maxLength: SERVER_LIMITS.cases.longText })),
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
        response: { 201: IntermediateRequestRecorded, ...ErrorResponses },
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
          200: PageOf('events', CaseAuditEvent, Type.Record(Type.String(), Type.Integer(), { description: "the case's audit events by action" })),
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
