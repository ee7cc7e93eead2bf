/** An attachment as the API and the case export's attachments/index.json show it (schemas.ts `Attachment`). */
import { iso } from '../../http/schemas.js';
import type { AttachmentRow } from './queries.js';
import type { AttachmentView } from './schemas.js';

export function attachmentView(a: AttachmentRow): AttachmentView {
  return {
    id: a.id,
    case_id: a.case_id,
    filename: a.filename,
    content_type: a.content_type,
    digest: a.digest,
    length: Number(a.length),
    description: a.description,
    added_by: a.added_by,
    added_at: iso(a.added_at),
    redaction: a.redacted_at === null ? null : { reason: a.redaction_reason!, redacted_by: a.redacted_by!, redacted_at: iso(a.redacted_at) },
  };
}
