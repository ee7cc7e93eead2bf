/**
 * The JSON shapes of devices, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { DEVICE_STATUSES } from './queries/identity.js';

/**
 * `string | null` as `type: ["string", "null"]` (JSON Schema 2020-12, OpenAPI 3.1) rather
 * than `anyOf`: fastify's serializer runs a full validation of each `anyOf` branch per value
 * to pick one, which cost ~40 % of serializing a 50-device page; a type list is one check.
 */
function nullableString(options: { format?: 'date-time' } = {}) {
  return Type.Unsafe<string | null>({ type: ['string', 'null'], ...options });
}

export const Device = Type.Object({
  name: Type.String(),
  status: Type.Enum(DEVICE_STATUSES),
  profile: nullableString(),
  agent_version: nullableString(),
  last_seen: nullableString({ format: 'date-time' }),
  cert_fingerprint: nullableString(),
  created_at: Timestamp,
});
export type DeviceView = Static<typeof Device>;

const CurrentRelease = Type.Object(
  {
    release_id: Uuid,
    product: Type.String(),
    version: Type.String(),
    transaction_id: Uuid,
    receipt_id: Uuid,
    label: Type.String({ description: 'the receipt key label: software-key (spec §2.3 rule 6)' }),
    accepted_at: Timestamp,
    members: Type.Array(Type.Object({ component: Type.String(), digest: Type.String({ description: 'the resulting digest the signed receipt names' }) })),
  },
  { description: "the release of the device's newest activated receipt (device-signed evidence); null before the first" },
);

const DeviceInventory = Type.Object(
  {
    attributes: Type.Record(Type.String(), Type.String(), { description: 'the documented set the agent reports (docs/inventory.md)' }),
    custom: Type.Record(Type.String(), Type.String(), { description: "operator-defined, from the device's SVC_AGENT_INVENTORY_FILE" }),
    members: Type.Array(Type.Object({ component: Type.String(), version: Type.String(), digest: Type.String() }), {
      description: 'each installed member as the agent reports it (device-reported, not evidence)',
    }),
  },
  { description: 'what the agent last reported; empty before its first report' },
);

export const Tags = Type.Array(Type.String(), { description: "the operator's tags, sorted" });

/** One device: the list item's fields, its inventory and tags, what it runs, and on what evidence. */
export const DeviceDetail = Type.Object({
  ...Device.properties,
  current_release: Type.Union([CurrentRelease, Type.Null()]),
  software: Type.Array(
    Type.Object({
      component: Type.String(),
      digest: Type.String(),
      source: Type.Union([Type.Literal('receipt'), Type.Literal('legacy')], {
        description: 'receipt: device-signed (an accepted receipt); legacy: device-reported only (a legacy rollout status report)',
      }),
      observed_at: Timestamp,
    }),
    { description: 'per component, the digest the device last reported running' },
  ),
  inventory: DeviceInventory,
  tags: Tags,
});

export const DeviceCounts = Type.Object({ online: Type.Integer(), offline: Type.Integer(), decommissioned: Type.Integer() });

/** A device's name and its tags after a tag was added or removed. */
export const TaggedDevice = Type.Object({ name: Type.String(), tags: Tags });
