import { normalizeUuid, LIMITS } from '@svc/release-core';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage, page } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { controlRollout, startLegacyRollout, startSignedRollout, type RolloutAction, type RolloutOverrides } from '../../resources/rollouts/commands.js';
import { rolloutCountsByKind, rolloutPage } from '../../resources/rollouts/queries.js';
import { rolloutActivity, rolloutDetail, rolloutsJson } from '../../resources/rollouts/views.js';
import { AuditEvent } from '../../resources/audit/schemas.js';
import { rolloutDelivery } from '../../resources/deltas/views.js';
import { inSnapshot } from '../../store/tx.js';

const Progress = Type.Object({
  pending: Type.Integer(),
  committed: Type.Integer(),
  rolled_back: Type.Integer(),
  failed: Type.Integer(),
  installed: Type.Integer(),
  skipped: Type.Integer({ description: 'devices decommissioned while they owed a result' }),
});
const RolloutFields = {
  id: Uuid,
  kind: Type.Union([Type.Literal('signed'), Type.Literal('legacy')]),
  release_id: Type.Union([Uuid, Type.Null()]),
  transaction_id: Type.Union([Uuid, Type.Null()]),
  status: Type.Union([Type.Literal('running'), Type.Literal('awaiting_approval'), Type.Literal('paused'), Type.Literal('completed'), Type.Literal('aborted')]),
  artifact_id: Uuid,
  component: Type.String(),
  group: Type.Integer({ description: 'index in activation.ordered_groups' }),
  position: Type.Integer({ description: 'global activation position' }),
  group_id: Uuid,
  product: Type.String({ description: "the release's product (the artifact's name for legacy)" }),
  version: Type.String({ description: "the release's version (the artifact's version for legacy)" }),
  group_name: Type.String({ description: "the target group's name" }),
  device_count: Type.Integer(),
  evidence: Type.Union([Type.Literal('signed-receipt'), Type.Literal('device-reported')]),
  progress: Progress,
  created_at: Type.String(),
};
const Rollout = Type.Object(RolloutFields, { additionalProperties: false });
const Member = Type.Object({ rollout_id: Uuid, component: Type.String(), group: Type.Integer(), position: Type.Integer(), artifact_id: Uuid });
const RolloutDetail = Type.Object(
  {
    ...RolloutFields,
    members: Type.Array(Member),
    failure_threshold: Type.Union([Type.Object({ count: Type.Optional(Type.Integer()), percent: Type.Optional(Type.Number()) }), Type.Null()]),
    waves: Type.Array(
      Type.Object({
        index: Type.Integer(),
        name: Type.String(),
        size: Type.Integer(),
        requires_approval: Type.Boolean(),
        state: Type.String(),
        done: Type.Integer(),
        failed: Type.Integer(),
      }),
    ),
    devices: Type.Array(
      Type.Object({ device: Type.String(), wave: Type.Integer(), state: Type.String(), updated_at: Type.Union([Type.String(), Type.Null()]) }),
    ),
    devices_total: Type.Integer(),
  },
  { additionalProperties: false },
);
const Activity = Type.Object(
  {
    timeline: Type.Array(AuditEvent),
    timeline_truncated: Type.Boolean(),
    failures: Type.Array(
      Type.Object(
        { reason: Type.String(), count: Type.Integer(), devices: Type.Array(Type.String(), { description: 'the first devices by name' }) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
const Digest = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });
const Delivery = Type.Object(
  {
    rollout_id: Uuid,
    deltas: Type.Object(
      {
        queued: Type.Integer(),
        building: Type.Integer(),
        ready: Type.Integer(),
        skipped: Type.Integer(),
        failed: Type.Integer(),
        items: Type.Array(
          Type.Object(
            {
              component: Type.String(),
              devices: Type.Integer({ description: 'devices of the rollout known to run the source when it started' }),
              source_digest: Digest,
              target_digest: Digest,
              state: Type.Union([Type.Literal('queued'), Type.Literal('building'), Type.Literal('ready'), Type.Literal('skipped'), Type.Literal('failed')]),
              target: Type.Union([Type.String(), Type.Null()], { description: 'the TUF target path of a ready delta' }),
              length: Type.Union([Type.Integer(), Type.Null()]),
              full_length: Type.Integer(),
              build_ms: Type.Union([Type.Integer(), Type.Null()]),
              error: Type.Union([Type.String(), Type.Null()]),
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false },
    ),
    totals: Type.Array(
      Type.Object(
        { method: Type.String(), members: Type.Integer(), bytes_transferred: Type.Integer(), full_length: Type.Integer(), fallbacks: Type.Integer() },
        { additionalProperties: false },
      ),
    ),
    deliveries: Type.Array(
      Type.Object(
        {
          device: Type.String(),
          receipt_id: Uuid,
          component: Type.String(),
          method: Type.Union([Type.Literal('full'), Type.Literal('delta'), Type.Literal('adaptive')]),
          bytes_transferred: Type.Integer(),
          full_length: Type.Integer(),
          source_digest: Type.Union([Digest, Type.Null()]),
          fallback: Type.Union([Type.String(), Type.Null()]),
          reported_at: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
    deliveries_total: Type.Integer(),
  },
  { additionalProperties: false },
);
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
        response: { 201: Type.Object({ ...RolloutFields, rollouts: Type.Array(Member) }, { additionalProperties: false }), ...ErrorResponses },
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
