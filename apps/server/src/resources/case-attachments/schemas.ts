/**
 * The JSON shapes of case attachments, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';

export const Attachment = Type.Object({
  id: Uuid,
  case_id: Uuid,
  filename: Type.String(),
  content_type: Type.String({ description: 'verified from the bytes' }),
  digest: Type.String({ description: 'sha256 of the bytes' }),
  length: Type.Integer(),
  description: Type.String(),
  added_by: Type.String(),
  added_at: Timestamp,
  redaction: Type.Union([Type.Object({ reason: Type.String(), redacted_by: Type.String(), redacted_at: Timestamp }), Type.Null()]),
});
export type AttachmentView = Static<typeof Attachment>;
