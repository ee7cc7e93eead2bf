/**
 * The JSON shapes of rollout deliveries, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';

const Digest = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });

/** One member's delivery as the device reported it: the path, the bytes that crossed the link, the fallback and failure. */
const deliveryPath = {
  method: Type.Union([Type.Literal('full'), Type.Literal('delta'), Type.Literal('adaptive')]),
  bytes_transferred: Type.Integer(),
  full_length: Type.Integer(),
  source_digest: Type.Union([Digest, Type.Null()]),
  fallback: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Union([Type.Integer(), Type.Null()]),
  resumes: Type.Union([Type.Integer(), Type.Null()]),
  failure: Type.Union([Type.String(), Type.Null()]),
};

export const Delivery = Type.Object(
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
          ...deliveryPath,
          failure_detail: Type.Union([Type.String(), Type.Null()]),
          reported_at: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
    deliveries_total: Type.Integer(),
    bundle_streams: Type.Array(
      Type.Object(
        {
          device: Type.String(),
          component: Type.String(),
          bytes_sent: Type.Integer({ description: 'bytes of the os-bundle the bundle port sent this device, over every request' }),
          requests: Type.Integer(),
          ranged_requests: Type.Integer(),
          first_at: Type.String(),
          last_at: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: 'os-bundle members streamed by RAUC from the bundle port, counted by the server (docs/delta-updates.md)' },
    ),
    bundle_streams_total: Type.Integer(),
  },
  { additionalProperties: false },
);
export type RolloutDelivery = Static<typeof Delivery>;

export const DeviceDeliveries = Type.Object(
  {
    device: Type.String(),
    members: Type.Array(
      Type.Object(
        {
          component: Type.String(),
          rollout_id: Type.Union([Uuid, Type.Null()]),
          transaction_id: Uuid,
          receipt_id: Uuid,
          ...deliveryPath,
          reported_at: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: 'the last delivery the device reported for each member, by component' },
    ),
  },
  { additionalProperties: false },
);
export type DeviceDeliveriesView = Static<typeof DeviceDeliveries>;
