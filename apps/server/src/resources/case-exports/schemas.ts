/**
 * The JSON shapes of evidence keys, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';

export const EvidenceKeyRecord = Type.Object(
  {
    seq: Type.Integer(),
    keyid: Type.String(),
    algorithm: Type.Literal('ed25519'),
    public_key_pem: Type.String(),
    valid_from: Type.String(),
    valid_until: Type.Union([Type.String(), Type.Null()]),
    created_by: Type.String(),
    retired_by: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);
export type EvidenceKeyView = Static<typeof EvidenceKeyRecord>;

/** The current evidence public key, as published for verifying case-export manifests. */
export const CurrentEvidenceKey = Type.Object({
  keyid: Type.String(),
  seq: Type.Integer(),
  algorithm: Type.Literal('ed25519'),
  payload_type: Type.String(),
  public_key_pem: Type.String(),
  valid_from: Type.String(),
});
