import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { tenantDeviceCaBundlePem } from '../../resources/device-ca/queries.js';
import { recordReceiptExport } from '../../resources/release-receipts/commands.js';
import { receiptExportStream } from '../../resources/release-receipts/export.js';
import { ACTIVATIONS, iterateReceipts, receiptCountsByActivation, receiptPage } from '../../resources/release-receipts/queries.js';
import { receiptDetail, receiptJson } from '../../resources/release-receipts/views.js';
import { Receipt, ReceiptCounts, ReceiptDetail } from '../../resources/release-receipts/schemas.js';

const Activation = Type.Union(ACTIVATIONS.map((a) => Type.Literal(a)));

/** spec §4: accepted receipts one at a time, and a tar batch of their envelopes (exact accepted bytes) with an index. */
export const releaseReceiptsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/release-receipts',
    {
      config: {
        permission: 'receipts.read',
        summary: 'List accepted receipts, newest first (device, rollout_id, transaction_id, activation, label filters; total, counts by activation)',
      },
      schema: {
        querystring: Strict({
          ...PageQuery,
          device: Type.Optional(Type.String({ maxLength: 63 })),
          rollout_id: Type.Optional(Uuid),
          transaction_id: Type.Optional(Uuid),
          activation: Type.Optional(Activation),
          label: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 200: PageOf('release_receipts', Receipt, ReceiptCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'release_receipts', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const q = request.query;
        const filter = { device: q.device, rolloutId: q.rollout_id, transactionId: q.transaction_id, activation: q.activation, label: q.label };
        const [{ rows, total }, counts] = await Promise.all([receiptPage(snap, tenantId, filter, limit, offset), receiptCountsByActivation(snap, tenantId)]);
        return { items: rows.map(receiptJson), total, counts };
      }),
  );

  app.get(
    '/release-receipts/export',
    {
      config: { permission: 'receipts.read', summary: 'Export accepted receipts as a tar (device-cas.pem, receipts/<digest>.dsse.json, index.jsonl)' },
      schema: {
        querystring: Strict({
          since: Type.Optional(Type.String({ format: 'date-time' })),
          until: Type.Optional(Type.String({ format: 'date-time' })),
          transaction_id: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 200: Type.Unknown({ description: 'application/x-tar' }), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const tenantId = principalOf(request).tenantId;
      const q = request.query;
      const filter: { since?: Date; until?: Date; transactionId?: string } = {};
      if (q.since !== undefined) filter.since = new Date(q.since);
      if (q.until !== undefined) filter.until = new Date(q.until);
      if (q.transaction_id !== undefined) filter.transactionId = q.transaction_id;
      const now = ctx.now();
      await execute(ctx, request, recordReceiptExport, q);
      void reply.type('application/x-tar').header('content-disposition', `attachment; filename="receipts-${now.toISOString().replace(/[:.]/g, '')}.tar"`);
      return reply.send(receiptExportStream(iterateReceipts(db, tenantId, filter), now, await tenantDeviceCaBundlePem(db, tenantId)));
    },
  );

  app.get(
    '/release-receipts/:id',
    {
      config: { permission: 'receipts.read', summary: 'One accepted receipt: its exact envelope, payload, verification result and label' },
      schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), response: { 200: ReceiptDetail, ...ErrorResponses } },
    },
    async (request) => {
      const r = await receiptDetail(db, principalOf(request).tenantId, request.params.id, ctx.now());
      if (!r) throw notFound(`release receipt ${request.params.id}`);
      return r;
    },
  );
};
