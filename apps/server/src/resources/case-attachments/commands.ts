/**
 * Attaching a stored file to a case and redacting one. Both lock the case row (so concurrent
 * uploads cannot pass the caps together), write one append-only row and audit `case:<id>` in the
 * same transaction. An attachment is immutable; a redaction keeps its record and stops serving
 * its bytes.
 */
import { notFound, ServerError } from '../../errors/server-error.js';
import { caseOr404 } from '../cases/commands.js';
import type { Command } from '../unit-of-work.js';
import type { AttachmentLimits } from './limits.js';
import { attachmentTotals, getAttachment, insertAttachment, insertRedaction, type AttachmentRow } from './queries.js';
import type { StoredAttachment } from './storage.js';

export interface AttachInput {
  caseId: string;
  filename: string;
  description: string;
  stored: StoredAttachment;
  limits: AttachmentLimits;
}

/** The count bound, checked before the upload streams and again under the case lock. */
export function checkCount(limits: AttachmentLimits, count: number): void {
  if (count >= limits.filesPerCase)
    throw new ServerError(
      'ATTACHMENT_LIMIT',
      `file: the case already has ${count} attachments, the limit of attachments per case (filesPerCase ${limits.filesPerCase})`,
    );
}

/** POST /cases/{id}/attachments (after storeAttachmentBytes): the record of an attachment within the case's caps. */
export const recordAttachment: Command<AttachInput, AttachmentRow> = async (uow, input) => {
  const c = await caseOr404(uow.trx, uow.tenant, input.caseId);
  if (c.state !== 'open' && c.state !== 'reportable')
    throw new ServerError('CASE_STATE', `case ${c.id} is ${c.state}: attach files to an open or reportable case (reopen it first)`);
  const totals = await attachmentTotals(uow.trx, uow.tenant, c.id);
  checkCount(input.limits, totals.count);
  if (totals.bytes + input.stored.length > input.limits.caseBytes) {
    throw new ServerError(
      'ATTACHMENT_TOO_LARGE',
      `file: the case's attachments would exceed the total limit of ${input.limits.caseBytes} bytes (caseBytes; ${input.limits.caseBytes - totals.bytes} bytes left)`,
    );
  }
  const id = await insertAttachment(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    filename: input.filename,
    content_type: input.stored.contentType,
    digest: input.stored.digest,
    length: input.stored.length,
    description: input.description,
    added_by: uow.actor.name,
    added_at: uow.now,
  });
  await uow.audit({
    action: 'case.attachment-add',
    target: `case:${c.id}`,
    detail: { attachment_id: id, filename: input.filename, content_type: input.stored.contentType, digest: input.stored.digest, length: input.stored.length },
  });
  return (await getAttachment(uow.trx, uow.tenant, c.id, id))!;
};

/** POST /cases/{id}/attachments/{aid}/redaction: the record stays, with who redacted it, when and why; the bytes are no longer served or exported. */
export const redactAttachment: Command<{ caseId: string; attachmentId: string; reason: string }, AttachmentRow> = async (uow, input) => {
  const c = await caseOr404(uow.trx, uow.tenant, input.caseId);
  const a = await getAttachment(uow.trx, uow.tenant, c.id, input.attachmentId);
  if (!a) throw notFound(`attachment ${input.attachmentId}`);
  if (a.redacted_at !== null) throw new ServerError('CONFLICT', `attachment ${a.id} was already redacted at ${a.redacted_at.toISOString()}`);
  await insertRedaction(uow.trx, {
    tenant_id: uow.tenant,
    case_id: c.id,
    attachment_id: a.id,
    reason: input.reason,
    redacted_by: uow.actor.name,
    redacted_at: uow.now,
  });
  await uow.audit({
    action: 'case.attachment-redact',
    target: `case:${c.id}`,
    detail: { attachment_id: a.id, filename: a.filename, digest: a.digest, reason: input.reason },
  });
  return (await getAttachment(uow.trx, uow.tenant, c.id, a.id))!;
};
