import { Type } from 'typebox';
import type { BlobStore } from '../../blobs/index.js';
import { principalOf } from '../../auth/principal.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { AppContext, V1Routes } from '../../http/context.js';
import { actorOf, execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { caseOr404, caseRecordOr404 } from '../../resources/cases/commands.js';
import { getCase } from '../../resources/cases/queries.js';
import { RECIPIENTS, recordFiling, recordSubmission } from '../../resources/case-submissions/commands.js';
import { MEMBER_STATES, SEVERITIES, STAGE_FIELDS, STAGE_TITLES, STAGES, TLP_LABELS } from '../../resources/case-submissions/fields.js';
import { prepareFiling, prepareSubmission } from '../../resources/case-submissions/preparation.js';
import {
  getSubmission,
  latestPacketOf,
  listFilings,
  listSubmissions,
  submissionStageCounts,
  supersededBy,
  type FilingRow,
  type PacketRow,
  type SubmissionMeta,
} from '../../resources/case-submissions/queries.js';
import type { PacketDocument } from '../../resources/case-submissions/srp-packet.js';
import { transportFor, type OutgoingPacket } from '../../resources/case-submissions/transport.js';
import { Filing, Submission, SubmissionFields, SubmissionItem, type FilingView, type SubmissionItemView } from '../../resources/case-submissions/schemas.js';

const CaseParams = Strict({ id: Type.String({ maxLength: 64 }) });
const SubmissionParams = Strict({ id: Type.String({ maxLength: 64 }), sid: Type.String({ maxLength: 64 }) });

function itemView(s: SubmissionMeta, supersededById: string | null): SubmissionItemView {
  return {
    id: s.id,
    case_id: s.case_id,
    stage: s.stage,
    supersedes_id: s.supersedes_id,
    superseded_by: supersededById,
    request_id: s.request_id,
    digest: s.digest,
    pdf_digest: s.pdf_digest,
    pdf_length: Number(s.pdf_length),
    created_by: s.created_by,
    created_at: iso(s.created_at),
  };
}

function filingView(f: FilingRow): FilingView {
  return {
    id: f.id,
    submission_id: f.submission_id,
    recipients: f.recipients,
    member_state: f.member_state,
    transport: f.transport,
    external_reference: f.external_reference,
    delivery: f.delivery,
    filed_by: f.filed_by,
    filed_at: iso(f.filed_at),
    recorded_at: iso(f.recorded_at),
  };
}

function documentJson(bytes: Uint8Array): Record<string, unknown> {
  return JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
}

/** What a transport gets of a packet: its form version and ordered fields. */
function outgoingPacket(p: PacketRow): OutgoingPacket {
  const doc = documentJson(p.document) as unknown as PacketDocument;
  return {
    id: p.id,
    digest: p.digest,
    formVersion: p.form_version,
    fields: doc.fields.map((f) => ({ id: f.id, label: f.label, value: f.value, required: f.required })),
  };
}

function blobsOf(ctx: AppContext): BlobStore {
  if (ctx.signingRepo === undefined) throw new Error('AppContext.signingRepo (its blob store) is required by the case submission routes');
  return ctx.signingRepo.blobs;
}

/**
 * Article 14 stage submissions (docs/article-14.md): produce the exact document (JSON, branded
 * PDF, and for users a CSAF 2.0 advisory), record its filing, optionally delivered by the file or
 * webhook transport.
 */
export const caseSubmissionsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  const submissionOr404 = (tenantId: string, caseId: string, sid: string) => caseRecordOr404(db, tenantId, caseId, 'submission', sid, getSubmission);
  const full = async (tenantId: string, caseId: string, sid: string) => {
    const s = await submissionOr404(tenantId, caseId, sid);
    const [newer, filings] = await Promise.all([supersededBy(db, tenantId, s.id), listFilings(db, tenantId, s.case_id, s.id)]);
    return { ...itemView(s, newer ?? null), document: documentJson(s.document), filings: filings.map(filingView) };
  };

  app.get(
    '/case-submission-fields',
    {
      config: {
        permission: 'evidence.read',
        summary: "The content fields of each stage submission per case kind (the table submissions are checked against), and the values of each field's type",
      },
      schema: {
        response: {
          200: SubmissionFields,
          ...ErrorResponses,
        },
      },
    },
    () => ({
      stages: STAGES.map((stage) => ({
        stage,
        title: STAGE_TITLES[stage],
        fields: { exploited_vulnerability: [...STAGE_FIELDS[stage].exploited_vulnerability], severe_incident: [...STAGE_FIELDS[stage].severe_incident] },
      })),
      member_states: [...MEMBER_STATES],
      tlp: [...TLP_LABELS],
      severities: [...SEVERITIES],
    }),
  );

  app.post(
    '/cases/:id/submissions',
    {
      config: {
        permission: 'evidence.write',
        summary: 'Produce a stage submission (early warning, notification, intermediate, final report, advisory): the exact JSON document and its branded PDF',
      },
      schema: {
        params: CaseParams,
        body: Strict({
          stage: Type.Union(STAGES.map((s) => Type.Literal(s))),
          content: Type.Record(Type.String(), Type.Unknown(), { maxProperties: 32, description: 'the fields of the stage and case kind (docs/article-14.md)' }),
          supersedes_id: Type.Optional(Uuid),
        }),
        response: { 201: Submission, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const tenantId = principalOf(request).tenantId;
      const b = request.body;
      // the document and its PDF are built and the PDF stored before the record (see preparation.ts)
      const prepared = await prepareSubmission(
        db,
        blobsOf(ctx),
        tenantId,
        actorOf(request).name,
        ctx.now(),
        {
          caseId: request.params.id,
          stage: b.stage,
          content: b.content,
          supersedesId: b.supersedes_id,
        },
        ctx.evidence,
      );
      const row = await execute(ctx, request, recordSubmission, prepared);
      return reply.code(201).send(await full(tenantId, row.case_id, row.id));
    },
  );

  app.get(
    '/cases/:id/submissions',
    {
      config: { permission: 'evidence.read', summary: "A case's submissions, oldest first (filter: stage; counts by stage)" },
      schema: {
        params: CaseParams,
        querystring: Strict({ ...PageQuery, stage: Type.Optional(Type.Union(STAGES.map((s) => Type.Literal(s)))) }),
        response: {
          200: PageOf(
            'submissions',
            SubmissionItem,
            Type.Record(Type.String(), Type.Integer(), { description: "the case's submissions by stage, whatever the filter" }),
          ),
          ...ErrorResponses,
        },
      },
    },
    async (request) =>
      listPage(db, request.query, 'submissions', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const c = await caseOr404(snap, tenantId, request.params.id, getCase);
        const { rows, total } = await listSubmissions(snap, tenantId, c.id, { stage: request.query.stage }, limit, offset);
        const counts = { ...Object.fromEntries(STAGES.map((s) => [s, 0])), ...(await submissionStageCounts(snap, tenantId, c.id)) };
        return { items: rows.map((r) => itemView(r, r.superseded_by)), total, counts };
      }),
  );

  app.get(
    '/cases/:id/submissions/:sid',
    {
      config: { permission: 'evidence.read', summary: 'One submission: its document and filings' },
      schema: { params: SubmissionParams, response: { 200: Submission, ...ErrorResponses } },
    },
    async (request) => full(principalOf(request).tenantId, request.params.id, request.params.sid),
  );

  app.get(
    '/cases/:id/submissions/:sid/document',
    {
      config: { permission: 'evidence.read', summary: 'The exact submission document (canonical JSON; its SHA-256 is the digest)' },
      schema: { params: SubmissionParams },
    },
    async (request, reply) => {
      const s = await submissionOr404(principalOf(request).tenantId, request.params.id, request.params.sid);
      return reply
        .type('application/json')
        .header('content-disposition', `attachment; filename="${s.stage}-${s.id}.json"`)
        .header('x-content-digest', s.digest)
        .send(Buffer.from(s.document));
    },
  );

  app.get(
    '/cases/:id/submissions/:sid/pdf',
    {
      config: { permission: 'evidence.read', summary: 'The branded PDF of a submission' },
      schema: { params: SubmissionParams },
    },
    async (request, reply) => {
      const s = await submissionOr404(principalOf(request).tenantId, request.params.id, request.params.sid);
      const { stream, totalLength } = await blobsOf(ctx).get(s.pdf_digest);
      return reply
        .type('application/pdf')
        .header('content-length', totalLength)
        .header('content-disposition', `attachment; filename="${s.stage}-${s.id}.pdf"`)
        .send(stream);
    },
  );

  app.get(
    '/cases/:id/submissions/:sid/csaf',
    {
      config: { permission: 'evidence.read', summary: 'The CSAF 2.0 advisory of an advisory submission (Article 14(8))' },
      schema: { params: SubmissionParams },
    },
    async (request, reply) => {
      const s = await submissionOr404(principalOf(request).tenantId, request.params.id, request.params.sid);
      const csaf = documentJson(s.document).csaf;
      if (s.stage !== 'advisory' || csaf === undefined) throw notFound(`CSAF advisory of submission ${s.id} (a ${s.stage})`);
      return reply.type('application/json').header('content-disposition', `attachment; filename="advisory-${s.id}.csaf.json"`).send(JSON.stringify(csaf));
    },
  );

  app.post(
    '/cases/:id/submissions/:sid/filings',
    {
      config: {
        permission: 'evidence.write',
        summary: 'Record the filing of a submission (to the CSIRT and/or ENISA, or to users), optionally delivered by the file or webhook transport',
      },
      schema: {
        params: SubmissionParams,
        body: Strict({
          recipients: Type.Array(Type.Union(RECIPIENTS.map((r) => Type.Literal(r))), { minItems: 1, maxItems: 3 }),
          member_state: Type.Optional(
            Type.Union(
              MEMBER_STATES.map((m) => Type.Literal(m)),
              { description: 'Member State of the coordinator CSIRT (main establishment)' },
            ),
          ),
          transport: Type.Optional(
            Type.Union([Type.Literal('manual'), Type.Literal('file'), Type.Literal('webhook')], { description: 'manual (default): filed by the operator' }),
          ),
          filed_at: Type.Optional(Type.String({ format: 'date-time', description: 'manual filings: when it was filed (default now; never in the future)' })),
          external_reference: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'the reference the recipient returned' })),
        }),
        response: { 201: Filing, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const tenantId = principalOf(request).tenantId;
      const b = request.body;
      const transport = b.transport ?? 'manual';
      const s = await prepareFiling(db, tenantId, request.params.id, request.params.sid, b.recipients, b.member_state);
      let delivery;
      if (transport !== 'manual') {
        if (b.external_reference !== undefined)
          throw new ServerError('CASE_INVALID', `external_reference: the ${transport} transport records the reference the recipient returns`);
        const t = transportFor(transport, ctx.evidence, ctx.config.dataDir);
        const { stream } = await blobsOf(ctx).get(s.pdf_digest);
        const chunks: Buffer[] = [];
        for await (const chunk of stream) chunks.push(chunk as Buffer);
        const packet = await latestPacketOf(db, tenantId, s.id);
        // delivered before the filing is recorded: the record says it left the server
        delivery = await t.deliver({
          tenantId,
          caseId: s.case_id,
          submissionId: s.id,
          stage: s.stage,
          digest: s.digest,
          json: s.document,
          pdf: Buffer.concat(chunks),
          packet: packet === undefined ? null : outgoingPacket(packet),
        });
      }
      const row = await execute(ctx, request, recordFiling, {
        caseId: s.case_id,
        submissionId: s.id,
        recipients: b.recipients,
        memberState: b.member_state,
        transport,
        filedAt: b.filed_at,
        externalReference: b.external_reference,
        delivery,
      });
      return reply.code(201).send(filingView(row));
    },
  );
};
