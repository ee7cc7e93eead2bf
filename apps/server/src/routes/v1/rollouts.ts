import { normalizeUuid, LIMITS } from '@svc/release-core';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage, page } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { controlRollout, startLegacyRollout, startSignedRollout, type RolloutAction, type RolloutOverrides } from '../../resources/rollouts/commands.js';
import { rolloutCountsByKind, rolloutPage } from '../../resources/rollouts/queries.js';
import { rolloutActivity, rolloutDetail, rolloutsJson } from '../../resources/rollouts/views.js';
import { rolloutDelivery } from '../../resources/deltas/views.js';
import { inSnapshot } from '../../store/tx.js';
import { Activity, Rollout, RolloutDetail, StartedRollout } from '../../resources/rollouts/schemas.js';
import { Delivery } from '../../resources/deltas/schemas.js';

const Wave = Type.Object(
  {
    name: Type.Optional(Type.String()),
    count: Type.Optional(Type.Integer()),
    percent: Type.Optional(Type.Number()),
    requires_approval: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const StartBody = Type.Union([
  Strict({
    release_id: Type.String({ maxLength: 64 }),
    overrides: Type.Optional(
      Strict({
        require_approval: Type.Optional(Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 100, description: 'wave indexes to gate additionally' })),
        failure_threshold: Type.Optional(
          Strict({ count: Type.Optional(Type.Integer({ minimum: 0 })), percent: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })) }),
        ),
      }),
    ),
  }),
  Strict({
    artifact_id: Type.String({ maxLength: 64 }),
    group_id: Type.String({ maxLength: 64 }),
    waves: Type.Optional(Type.Array(Wave, { maxItems: LIMITS.legacyRolloutWaves })),
  }),
]);
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec §4: start (signed or legacy), list, detail, approve, resume, abort. */
export const rolloutsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post(
    '/rollouts',
    {
      config: { permission: 'rollouts.write', summary: 'Start a rollout: {release_id} (signed) or {artifact_id, group_id} (legacy)' },
      schema: {
        body: StartBody,
        response: { 201: StartedRollout, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const body = request.body as { release_id?: string; overrides?: RolloutOverrides; artifact_id?: string; group_id?: string; waves?: unknown };
      const started =
        body.release_id !== undefined
          ? await execute(ctx, request, startSignedRollout, { releaseId: body.release_id, overrides: body.overrides })
          : await execute(ctx, request, startLegacyRollout, { artifactId: body.artifact_id!, groupId: body.group_id!, waves: body.waves });
      const lead = (await rolloutDetail(db, principalOf(request).tenantId, started.rollout_ids[0]!))!;
      const { members, failure_threshold: _t, waves: _w, devices: _d, devices_total: _n, ...view } = lead;
      return reply.code(201).send({ ...view, rollouts: members });
    },
  );

  app.get(
    '/rollouts',
    {
      config: {
        permission: 'rollouts.read',
        summary: 'List rollouts (each member rollout of a transaction is listed; kind, release_id filters; total, counts by kind)',
      },
      schema: {
        querystring: Strict({
          ...PageQuery,
          kind: Type.Optional(Type.Union([Type.Literal('signed'), Type.Literal('legacy')])),
          release_id: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 200: PageOf('rollouts', Rollout, Type.Record(Type.String(), Type.Integer())), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'rollouts', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const releaseId = request.query.release_id === undefined ? undefined : normalizeUuid(request.query.release_id);
        if (request.query.release_id !== undefined && releaseId === undefined) throw new ServerError('ROLLOUT_INVALID', 'release_id: must be a release id');
        const [{ rows, total }, counts] = await Promise.all([
          rolloutPage(snap, tenantId, { kind: request.query.kind, releaseId }, limit, offset),
          rolloutCountsByKind(snap, tenantId),
        ]);
        return { items: await rolloutsJson(snap, rows), total, counts };
      }),
  );

  app.get(
    '/rollouts/:id',
    {
      config: { permission: 'rollouts.read', summary: 'Rollout detail: members, waves, per-device progress (devices paged by limit/offset)' },
      schema: { params: IdParams, querystring: Strict({ ...PageQuery }), response: { 200: RolloutDetail, ...ErrorResponses } },
    },
    async (request) =>
      // the detail, its counts and its page of devices in one snapshot (store/tx.ts inSnapshot)
      inSnapshot(db, async (snap) => {
        const r = await rolloutDetail(snap, principalOf(request).tenantId, request.params.id, page(request.query));
        if (!r) throw notFound(`rollout ${request.params.id}`);
        return r;
      }),
  );

  app.get(
    '/rollouts/:id/activity',
    {
      config: {
        permission: 'rollouts.read',
        summary: 'Rollout activity: its timeline (start, wave moves, approvals, pauses, abort) from its audit rows, and its failed devices grouped by reason',
      },
      schema: { params: IdParams, response: { 200: Activity, ...ErrorResponses } },
    },
    async (request) =>
      inSnapshot(db, async (snap) => {
        const a = await rolloutActivity(snap, principalOf(request).tenantId, request.params.id);
        if (!a) throw notFound(`rollout ${request.params.id}`);
        return a;
      }),
  );

  app.get(
    '/rollouts/:id/delivery',
    {
      config: {
        permission: 'rollouts.read',
        summary:
          "Rollout delivery: the deltas its start asked for and how far they got, and how devices' bytes arrived (full, delta, adaptive) per method and per device (paged by limit/offset)",
      },
      schema: { params: IdParams, querystring: Strict({ ...PageQuery }), response: { 200: Delivery, ...ErrorResponses } },
    },
    async (request) =>
      inSnapshot(db, async (snap) => {
        const r = await rolloutDelivery(snap, principalOf(request).tenantId, request.params.id, page(request.query));
        if (!r) throw notFound(`rollout ${request.params.id}`);
        return r;
      }),
  );

  for (const action of ['approve', 'resume', 'abort'] as const satisfies readonly RolloutAction[]) {
    app.post(
      `/rollouts/:id/${action}`,
      {
        config: { permission: 'rollouts.write', summary: `${action[0]!.toUpperCase()}${action.slice(1)} a rollout (acts on every member of its transaction)` },
        schema: { params: IdParams, response: { 200: RolloutDetail, ...ErrorResponses } },
      },
      async (request) => {
        await execute(ctx, request, controlRollout, { id: request.params.id, action });
        return (await rolloutDetail(db, principalOf(request).tenantId, request.params.id))!;
      },
    );
  }
};
