import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { caseOr404, caseRecordOr404 } from '../../resources/cases/commands.js';
import { getCase } from '../../resources/cases/queries.js';
import { getPacket, listPackets, type PacketMeta } from '../../resources/case-submissions/queries.js';
import { PRODUCT_CATEGORIES, SRP_STAGES } from '../../resources/case-submissions/srp-form.js';
import { packetText, recordPacket, type PacketDocument } from '../../resources/case-submissions/srp-packet.js';
import { Packet, PacketItem, type PacketItemView, type PacketView } from '../../resources/case-submissions/schemas.js';

const CaseParams = Strict({ id: Type.String({ maxLength: 64 }) });
const PacketParams = Strict({ id: Type.String({ maxLength: 64 }), pid: Type.String({ maxLength: 64 }) });

function itemView(p: PacketMeta): PacketItemView {
  return {
    id: p.id,
    case_id: p.case_id,
    stage: p.stage as (typeof SRP_STAGES)[number],
    form_version: p.form_version,
    submission_id: p.submission_id,
    digest: p.digest,
    missing: p.missing,
    created_by: p.created_by,
    created_at: iso(p.created_at),
  };
}

function packetView(p: PacketMeta, doc: PacketDocument): PacketView {
  return {
    id: p.id,
    case_id: p.case_id,
    stage: doc.stage,
    kind: doc.kind,
    form: doc.form,
    fields: doc.fields,
    missing: doc.missing,
    sources: doc.sources,
    digest: p.digest,
    text: packetText(doc, p.digest),
    created_by: p.created_by,
    created_at: iso(p.created_at),
    submission_id: p.submission_id,
  };
}

const parse = (bytes: Uint8Array) => JSON.parse(Buffer.from(bytes).toString('utf8')) as PacketDocument;

/**
 * Reporting-platform packets (docs/article-14.md "Reporting-platform packet"): the fields of
 * ENISA's single reporting platform form for a stage, filled from the case and the fleet,
 * recorded with the case; as JSON and as text/plain.
 */
export const casePacketsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const packetOr404 = (tenantId: string, caseId: string, pid: string) => caseRecordOr404(db, tenantId, caseId, 'packet', pid, getPacket);

  app.post(
    '/cases/:id/srp-packets',
    {
      config: {
        permission: 'evidence.write',
        summary:
          "Prepare and record the reporting-platform packet of a stage: the single reporting platform form's fields in order, filled from the case and the fleet, required ones marked, missing ones named",
      },
      schema: {
        params: CaseParams,
        body: Strict({
          stage: Type.Enum(SRP_STAGES, { description: 'early_warning, notification or final_report' }),
          product_category: Type.Optional(
            Type.Enum(Object.keys(PRODUCT_CATEGORIES) as (keyof typeof PRODUCT_CATEGORIES)[], { description: 'the CRA product category (Annex III, IV)' }),
          ),
        }),
        response: { 201: Packet, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const { meta, document } = await execute(ctx, request, recordPacket, { caseId: request.params.id, stage: b.stage, productCategory: b.product_category });
      return reply.code(201).send(packetView(meta, document));
    },
  );

  app.get(
    '/cases/:id/srp-packets',
    {
      config: { permission: 'evidence.read', summary: "A case's reporting-platform packets, oldest first (filter: stage; counts by stage)" },
      schema: {
        params: CaseParams,
        querystring: Strict({ ...PageQuery, stage: Type.Optional(Type.Enum(SRP_STAGES)) }),
        response: {
          200: PageOf('packets', PacketItem, Type.Record(Type.String(), Type.Integer(), { description: "the case's packets by stage, whatever the filter" })),
          ...ErrorResponses,
        },
      },
    },
    async (request) =>
      listPage(db, request.query, 'packets', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const c = await caseOr404(snap, tenantId, request.params.id, getCase);
        const { rows, total, counts } = await listPackets(snap, tenantId, c.id, request.query.stage, limit, offset);
        return { items: rows.map(itemView), total, counts: { ...Object.fromEntries(SRP_STAGES.map((s) => [s, 0])), ...counts } };
      }),
  );

  app.get(
    '/cases/:id/srp-packets/:pid',
    {
      config: { permission: 'evidence.read', summary: 'One reporting-platform packet: its fields in order, the missing required ones, and its text' },
      schema: { params: PacketParams, response: { 200: Packet, ...ErrorResponses } },
    },
    async (request) => {
      const p = await packetOr404(principalOf(request).tenantId, request.params.id, request.params.pid);
      return packetView(p, parse(p.document));
    },
  );

  app.get(
    '/cases/:id/srp-packets/:pid/text',
    {
      config: { permission: 'evidence.read', summary: 'A reporting-platform packet as text/plain, in the form order' },
      schema: { params: PacketParams },
    },
    async (request, reply) => {
      const p = await packetOr404(principalOf(request).tenantId, request.params.id, request.params.pid);
      return reply
        .type('text/plain; charset=utf-8')
        .header('x-content-digest', p.digest)
        .send(packetText(parse(p.document), p.digest));
    },
  );
};
