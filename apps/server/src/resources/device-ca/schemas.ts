/**
 * The JSON shapes of tenant device CAs, declared once: the routes answer with them (the OpenAPI document,
 * the serializer).
 */
import { Type } from 'typebox';

const RetiredDeviceCa = Type.Object({
  seq: Type.Integer(),
  certificate_pem: Type.String(),
  fingerprint: Type.String(),
  not_after: Type.String(),
  retired_at: Type.String(),
  /** certificates it issued are accepted until then (docs/device-channel.md "Device CA rotation") */
  trusted_until: Type.String(),
});

export const DeviceCa = Type.Object({
  tenant_id: Type.String(),
  seq: Type.Integer(),
  certificate_pem: Type.String(),
  fingerprint: Type.String(),
  not_after: Type.String(),
  /** CAs a rotation replaced, newest first: they verify the receipts of the certificates they issued */
  retired: Type.Array(RetiredDeviceCa),
});
