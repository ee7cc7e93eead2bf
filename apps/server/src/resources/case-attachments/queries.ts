/**
 * Case attachments and their redactions: append-only in the database (migration 0020). The bytes
 * live in the content-addressed blob store under `digest`. Every function is tenant-scoped.
 */
import { normalizeUuid } from '@svc/release-core';
import type { Insertable, Selectable } from 'kysely';
import type { CaseAttachmentsTable } from '../../store/case-tables.js';
import type { Db } from '../../store/tx.js';

export type AttachmentRow = Selectable<CaseAttachmentsTable> & { redacted_at: Date | null; redaction_reason: string | null; redacted_by: string | null };

function withRedaction(db: Db, tenantId: string, caseId: string) {
  return db
    .selectFrom('case_attachments as a')
    .leftJoin('case_attachment_redactions as r', 'r.attachment_id', 'a.id')
    .selectAll('a')
    .select(['r.redacted_at', 'r.reason as redaction_reason', 'r.redacted_by'])
    .where('a.tenant_id', '=', tenantId)
    .where('a.case_id', '=', caseId);
}

/** Attachments of a case that are not redacted: how many and how many bytes (what the caps count). */
export async function attachmentTotals(db: Db, tenantId: string, caseId: string): Promise<{ count: number; bytes: number }> {
  const row = await db
    .selectFrom('case_attachments as a')
    .leftJoin('case_attachment_redactions as r', 'r.attachment_id', 'a.id')
    .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.coalesce(eb.fn.sum<string>('a.length'), eb.val('0')).as('bytes')])
    .where('a.tenant_id', '=', tenantId)
    .where('a.case_id', '=', caseId)
    .where('r.attachment_id', 'is', null)
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), bytes: Number(row.bytes) };
}

export async function insertAttachment(db: Db, row: Insertable<CaseAttachmentsTable>): Promise<string> {
  const r = await db.insertInto('case_attachments').values(row).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export async function getAttachment(db: Db, tenantId: string, caseId: string, id: string): Promise<AttachmentRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return withRedaction(db, tenantId, caseId).where('a.id', '=', uuid).executeTakeFirst();
}

export async function listAttachments(
  db: Db,
  tenantId: string,
  caseId: string,
  limit: number,
  offset: number,
): Promise<{ rows: AttachmentRow[]; counts: { attached: number; redacted: number } }> {
  const [rows, counts] = await Promise.all([
    withRedaction(db, tenantId, caseId).orderBy('a.seq').limit(limit).offset(offset).execute(),
    db
      .selectFrom('case_attachments as a')
      .leftJoin('case_attachment_redactions as r', 'r.attachment_id', 'a.id')
      .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.count<string>('r.attachment_id').as('redacted')])
      .where('a.tenant_id', '=', tenantId)
      .where('a.case_id', '=', caseId)
      .executeTakeFirstOrThrow(),
  ]);
  const redacted = Number(counts.redacted);
  return { rows, counts: { attached: Number(counts.n) - redacted, redacted } };
}

/** Every attachment of a case, oldest first (the export; bounded by the per-case count cap). */
export async function allAttachments(db: Db, tenantId: string, caseId: string): Promise<AttachmentRow[]> {
  return withRedaction(db, tenantId, caseId).orderBy('a.seq').execute();
}

export async function insertRedaction(
  db: Db,
  row: { tenant_id: string; case_id: string; attachment_id: string; reason: string; redacted_by: string; redacted_at: Date },
): Promise<void> {
  await db.insertInto('case_attachment_redactions').values(row).execute();
}
