/**
 * The JSON shapes of rollouts, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';
import { AuditEvent } from '../audit/schemas.js';

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

export const Rollout = Type.Object(RolloutFields, { additionalProperties: false });
export type RolloutView = Static<typeof Rollout>;

const Member = Type.Object({ rollout_id: Uuid, component: Type.String(), group: Type.Integer(), position: Type.Integer(), artifact_id: Uuid });

/** A started rollout: its lead member rollout's fields and the member rollouts of its release transaction. */
export const StartedRollout = Type.Object({ ...RolloutFields, rollouts: Type.Array(Member) }, { additionalProperties: false });

export const RolloutDetail = Type.Object(
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
export type RolloutDetailView = Static<typeof RolloutDetail>;

export const Activity = Type.Object(
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
export type RolloutActivity = Static<typeof Activity>;
