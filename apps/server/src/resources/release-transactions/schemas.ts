/**
 * The JSON shapes of release transactions, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';

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

export const Transaction = Type.Object(TxFields, { additionalProperties: false });
export type TransactionView = Static<typeof Transaction>;

/** One transaction with a page of its devices' states. */
export const TransactionDetail = Type.Object(
  { ...TxFields, device_states: Type.Array(Type.Object({ device: Type.String(), state: Type.String(), wave: Type.Integer() })) },
  { additionalProperties: false },
);
