/**
 * The JSON shapes of log requests, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp, Timestamp, Uuid } from '../../http/schemas.js';

export const LogRequest = Type.Object({ id: Uuid, device: Type.String(), status: Type.String(), created_at: Timestamp, fulfilled_at: NullableTimestamp });
export type LogRequestView = Static<typeof LogRequest>;
