/**
 * The JSON shapes of authorizer keys, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';

export const AuthorizerKey = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    keyid: Type.String(),
    public_key_pem: Type.String(),
    created_at: Type.String(),
    revoked_at: Type.Union([Type.String(), Type.Null()]),
    status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  },
  { additionalProperties: false },
);
export type AuthorizerKeyView = Static<typeof AuthorizerKey>;
