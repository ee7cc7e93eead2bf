/**
 * The JSON shapes of the caller's identity, declared once: the routes answer with them (the OpenAPI document,
 * the serializer).
 */
import { Type } from 'typebox';
import { PERMISSIONS, ROLES } from '../../auth/permissions.js';
import { Uuid } from '../../http/schemas.js';

export const MeResponse = Type.Object({
  email: Type.Union([Type.String(), Type.Null()]),
  role: Type.Enum(ROLES),
  tenant_id: Uuid,
  permissions: Type.Array(Type.Enum(PERMISSIONS)),
  credential: Type.Union([Type.Literal('session'), Type.Literal('api-key')]),
  user_id: Type.Union([Uuid, Type.Null()]),
});
