import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { iterateReceipts } from '../../pipeline/receipt-query.js';
import { receiptExportStream } from '../../pipeline/receipt-export.js';
import { audit } from '../../audit/record.js';

/** spec 4: a tar batch of receipt envelopes (exact accepted bytes) with an index, streamed. */
export const releaseReceiptsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get('/release-receipts/export', {
    config: { permission: 'receipts.read', summary: 'Export accepted receipts as a tar (receipts/<digest>.dsse.json + index.jsonl)' },
    schema: {
      querystring: Strict({
        since: Type.Optional(Type.String({ format: 'date-time' })),
        until: Type.Optional(Type.String({ format: 'date-time' })),
        transaction_id: Type.Optional(Type.String({ maxLength: 64 })),
      }),
      response: { 200: Type.Unknown({ description: 'application/x-tar' }), ...ErrorResponses },
    },
  }, async (request, reply) => {
    const tenantId = principalOf(request).tenantId;
    const q = request.query;
    const filter: { since?: Date; until?: Date; transactionId?: string } = {};
    if (q.since !== undefined) filter.since = new Date(q.since);
    if (q.until !== undefined) filter.until = new Date(q.until);
    if (q.transaction_id !== undefined) filter.transactionId = q.transaction_id;
    const now = ctx.now();
    await audit(db, request, { action: 'release-receipts.export', target: 'release-receipts', detail: { ...q } });
    void reply.type('application/x-tar').header('content-disposition', `attachment; filename="receipts-${now.toISOString().replace(/[:.]/g, '')}.tar"`);
    return reply.send(receiptExportStream(iterateReceipts(db, tenantId, filter), now));
  });
};
