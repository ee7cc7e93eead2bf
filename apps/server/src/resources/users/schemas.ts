/**
 * The JSON shapes of users, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { ROLES } from '../../auth/permissions.js';
import { Timestamp, Uuid } from '../../http/schemas.js';

export const User = Type.Object({ id: Uuid, email: Type.String(), display_name: Type.String(), role: Type.Enum(ROLES), created_at: Timestamp });
export type UserView = Static<typeof User>;

export const UserCounts = Type.Object({ admin: Type.Integer(), operator: Type.Integer(), viewer: Type.Integer() });
