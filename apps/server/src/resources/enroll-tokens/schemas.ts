/**
 * The JSON shapes of enrollment tokens, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { ENROLL_TOKEN_STATUSES } from './queries.js';

export const EnrollToken = Type.Object({
  id: Uuid,
  name: Type.String(),
  prefix: Type.String(),
  max_uses: Type.Integer(),
  uses: Type.Integer(),
  expires_at: Timestamp,
  created_at: Timestamp,
  created_by: Type.Union([Type.String(), Type.Null()]),
  status: Type.Enum(ENROLL_TOKEN_STATUSES, {
    description: 'at the server clock: expired once expires_at has passed (whatever its uses), exhausted when uses reached max_uses, else active',
  }),
});
export type EnrollTokenView = Static<typeof EnrollToken>;

export const EnrollTokenCounts = Type.Object({ active: Type.Integer(), expired: Type.Integer(), exhausted: Type.Integer() });

/** A created enrollment token with its secret, answered once. */
export const EnrollTokenCreated = Type.Intersect([EnrollToken, Type.Object({ token: Type.String() })]);
