/**
 * The JSON shapes of API keys, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { ROLES } from '../../auth/permissions.js';
import { NullableTimestamp, Timestamp, Uuid } from '../../http/schemas.js';

export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  role: Type.Enum(ROLES),
  prefix: Type.String(),
  created_at: Timestamp,
  last_used_at: NullableTimestamp,
  revoked_at: NullableTimestamp,
});
export type ApiKeyView = Static<typeof ApiKey>;

export const ApiKeyCounts = Type.Object({ active: Type.Integer(), revoked: Type.Integer() });

/** A created API key with its secret, answered once. */
export const ApiKeyCreated = Type.Intersect([ApiKey, Type.Object({ key: Type.String() })]);
