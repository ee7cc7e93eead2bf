/**
 * The JSON shapes of release receipts, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { ACTIVATIONS } from './queries.js';

const ReceiptFields = {
  id: Uuid,
  device: Type.String(),
  rollout_id: Type.Union([Uuid, Type.Null()], { description: 'the member rollout at position 0 of the deployment' }),
  transaction_id: Uuid,
  release_id: Uuid,
  activation: Type.String(),
  health: Type.String(),
  payload_digest: Type.String(),
  envelope_digest: Type.String(),
  label: Type.String({ description: 'software-key: the device key is software-held (spec §2.3 rule 6)' }),
  accepted_at: Timestamp,
};

export const Receipt = Type.Object(ReceiptFields, { additionalProperties: false });
export type ReceiptView = Static<typeof Receipt>;

export const ReceiptCounts = Type.Object(Object.fromEntries(ACTIVATIONS.map((a) => [a, Type.Integer()])), {
  additionalProperties: false,
  description: "the tenant's receipts by activation",
});

/** The stored envelope verified again, now, against the tenant device CAs trusted when it was accepted. */
const ReceiptVerification = Type.Object(
  {
    verified: Type.Boolean(),
    checked_at: Timestamp,
    certificate_valid_at: Timestamp,
    error: Type.Union([Type.String(), Type.Null()]),
    device_certificate: Type.Union([
      Type.Object({ fingerprint: Type.String(), serial_number: Type.String(), subject_cn: Type.String(), not_before: Timestamp, not_after: Timestamp }),
      Type.Null(),
    ]),
  },
  { description: 'the stored envelope verified again now against the tenant device CA, the certificate at its acceptance time' },
);
export type ReceiptVerificationView = Static<typeof ReceiptVerification>;

export const ReceiptDetail = Type.Object(
  {
    ...ReceiptFields,
    envelope: Type.Object(
      {
        payloadType: Type.String(),
        payload: Type.String({ description: 'base64 of the payload bytes' }),
        signatures: Type.Array(Type.Object({ keyid: Type.String(), sig: Type.String() })),
      },
      { description: 'the exact accepted DSSE envelope' },
    ),
    payload: Type.Record(Type.String(), Type.Unknown(), { description: 'the svc.release-receipt.v1 payload as accepted' }),
    verification: ReceiptVerification,
  },
  { additionalProperties: false },
);
export type ReceiptDetailView = Static<typeof ReceiptDetail>;
