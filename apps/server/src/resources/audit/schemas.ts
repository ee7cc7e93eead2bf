import { Type } from 'typebox';

/** One audit event as the API answers it (`auditEventJson`). */
export const AuditEvent = Type.Object({
  id: Type.String(),
  at: Type.String(),
  actor: Type.String(),
  credential: Type.String(),
  tenant_id: Type.String(),
  action: Type.String(),
  target: Type.String(),
  request_id: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Record(Type.String(), Type.Unknown()),
});
