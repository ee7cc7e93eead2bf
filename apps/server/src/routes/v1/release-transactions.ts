import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { listPage, page } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { transactionCountsByState, transactionPage } from '../../resources/release-transactions/queries.js';
import { transactionDetail, transactionResult, transactionsJson } from '../../resources/release-transactions/views.js';
import { deploymentDevicePage } from '../../resources/rollouts/queries.js';
import { inSnapshot } from '../../store/tx.js';

const State = Type.Union([Type.Literal('running'), Type.Literal('committed'), Type.Literal('rolled back'), Type.Literal('failed')]);
const TxFields = {
  id: Uuid,
  release_id: Uuid,
  member_count: Type.Integer(),
  members: Type.Array(
    Type.Object({ rollout_id: Uuid, component: Type.String(), group: Type.Integer(), position: Type.Integer(), artifact_id: Uuid, digest: Type.String() }),
  ),
  state: State,
  group_id: Uuid,
  snapshot_digest: Type.String(),
  aborted: Type.Boolean(),
  devices: Type.Object({
    total: Type.Integer(),
    pending: Type.Integer(),
    committed: Type.Integer(),
    rolled_back: Type.Integer(),
    failed: Type.Integer(),
    skipped: Type.Integer({ description: 'devices decommissioned while they owed a receipt' }),
  }),
  created_at: Type.String(),
};
const Transaction = Type.Object(TxFields, { additionalProperties: false });
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
        response: {
          200: Type.Object(
            { ...TxFields, device_states: Type.Array(Type.Object({ device: Type.String(), state: Type.String(), wave: Type.Integer() })) },
            { additionalProperties: false },
          ),
          ...ErrorResponses,
        },
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
