import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { listPage, page } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { transactionCountsByState, transactionPage } from '../../resources/release-transactions/queries.js';
import { transactionDetail, transactionResult, transactionsJson } from '../../resources/release-transactions/views.js';
import { deploymentDevicePage } from '../../resources/rollouts/queries.js';
import { inSnapshot } from '../../store/tx.js';
import { Transaction, TransactionDetail } from '../../resources/release-transactions/schemas.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec §2, spec §3, spec §4: release transactions with states derived from accepted receipts. */
export const releaseTransactionsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/release-transactions',
    {
      config: { permission: 'rollouts.read', summary: 'List release transactions (total, counts by state)' },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: { 200: PageOf('release_transactions', Transaction, Type.Record(Type.String(), Type.Integer())), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'release_transactions', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const [{ rows, total }, counts] = await Promise.all([transactionPage(snap, tenantId, limit, offset), transactionCountsByState(snap, tenantId)]);
        return { items: await transactionsJson(snap, rows), total, counts };
      }),
  );

  app.get(
    '/release-transactions/:id',
    {
      config: { permission: 'rollouts.read', summary: 'One release transaction with per-device states (paged by limit/offset)' },
      schema: {
        params: IdParams,
        querystring: Strict({ ...PageQuery }),
        response: { 200: TransactionDetail, ...ErrorResponses },
      },
    },
    async (request) =>
      // the detail, its counts and its page of devices in one snapshot (store/tx.ts inSnapshot)
      inSnapshot(db, async (snap) => {
        const tenantId = principalOf(request).tenantId;
        const t = await transactionDetail(snap, tenantId, request.params.id);
        if (!t) throw notFound(`release transaction ${request.params.id}`);
        const { limit, offset } = page(request.query);
        const devices = await deploymentDevicePage(snap, tenantId, t.id, limit, offset);
        return { ...t, device_states: devices.map((d) => ({ device: d.device_name, state: d.state, wave: d.wave_idx })) };
      }),
  );

  app.get(
    '/release-transactions/:id/result',
    {
      config: { permission: 'rollouts.read', summary: 'Deterministic per-device result manifests (RFC 8785 JSON, devices sorted by name)' },
      schema: {
        params: IdParams,
        response: { 200: Type.Unknown({ description: 'canonical JSON: {devices, members, release_id, transaction_id}' }), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const chunks = await transactionResult(db, principalOf(request).tenantId, request.params.id);
      void reply.type('application/json');
      return reply.send(Readable.from(chunks));
    },
  );
};
