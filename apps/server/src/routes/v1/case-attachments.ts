import multipart from '@fastify/multipart';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { checkCount, recordAttachment, redactAttachment } from '../../resources/case-attachments/commands.js';
import { attachmentLimits, sanitizeFilename } from '../../resources/case-attachments/limits.js';
import { attachmentTotals, getAttachment, listAttachments } from '../../resources/case-attachments/queries.js';
import { attachmentView } from '../../resources/case-attachments/views.js';
import { byteBound, storeAttachmentBytes, type StoredAttachment } from '../../resources/case-attachments/storage.js';
import { caseOr404, caseRecordOr404 } from '../../resources/cases/commands.js';
import { getCase } from '../../resources/cases/queries.js';
import { Attachment } from '../../resources/case-attachments/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const CaseParams = Strict({ id: Type.String({ maxLength: 64 }) });
const AttachmentParams = Strict({ id: Type.String({ maxLength: 64 }), aid: Type.String({ maxLength: 64 }) });

/** RFC 6266: an ASCII fallback and the UTF-8 name (the stored name is already sanitized). */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** Bounded case attachments (docs/article-14.md "Attachments"): streamed, sniffed, hashed, immutable; removal is a recorded redaction. */
export const caseAttachmentsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const limits = attachmentLimits(ctx.evidence?.attachmentLimits);
  // one file per request; the blob store enforces the byte bound while hashing
  await app.register(multipart, {
    limits: { files: 1, fields: 2, fieldSize: limits.descriptionChars * 4, parts: 3, fileSize: limits.fileBytes + 1 },
    throwFileSizeLimit: false,
  });

  app.post(
    '/cases/:id/attachments',
    {
      config: {
        permission: 'evidence.write',
        summary: 'Attach a file to a case (multipart: file, description?); bounded, type verified from the bytes, SHA-256 recorded',
      },
      schema: {
        consumes: ['multipart/form-data'],
        params: CaseParams,
        response: { 201: Attachment, ...ErrorResponses, 413: Type.Object({ error: Type.String() }) },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) throw new ServerError('ATTACHMENT_INVALID', 'body: must be multipart/form-data with file and description?');
      const tenantId = principalOf(request).tenantId;
      const c = await caseOr404(db, tenantId, request.params.id, getCase);
      if (c.state !== 'open' && c.state !== 'reportable')
        throw new ServerError('CASE_STATE', `case ${c.id} is ${c.state}: attach files to an open or reportable case (reopen it first)`);
      // the bounds known before a byte is read: refuse early, then stream within the bytes left
      const totals = await attachmentTotals(db, tenantId, c.id);
      checkCount(limits, totals.count);
      const bound = byteBound(limits, totals.bytes);
      let stored: StoredAttachment | undefined;
      let filename: string | undefined;
      let description = '';
      try {
        for await (const part of request.parts()) {
          if (part.type === 'file') {
            if (part.fieldname !== 'file') throw new ServerError('ATTACHMENT_INVALID', `${part.fieldname}: unknown file field (send the bytes as "file")`);
            filename = sanitizeFilename(part.filename, limits.filenameChars);
            stored = await storeAttachmentBytes(ctx.signingRepo!.blobs, part.file, part.mimetype, bound);
            if (part.file.truncated) throw new ServerError('ATTACHMENT_TOO_LARGE', `file: larger than ${bound.name}`);
          } else if (part.fieldname === 'description') {
            description = String(part.value);
            if (description.length > limits.descriptionChars)
              throw new ServerError('ATTACHMENT_INVALID', `description: at most ${limits.descriptionChars} characters (descriptionChars)`);
          } else throw new ServerError('ATTACHMENT_INVALID', `${part.fieldname}: unknown field`);
        }
      } catch (e) {
        // the multipart parser's own limits (parts, fields, files): the body is malformed, not the server
        const code = (e as { code?: unknown }).code;
        if (!(e instanceof ServerError) && typeof code === 'string' && code.startsWith('FST_'))
          throw new ServerError('ATTACHMENT_INVALID', `body: ${(e as Error).message} (send one file and at most a description)`, { cause: e });
        throw e;
      }
      if (stored === undefined) throw new ServerError('ATTACHMENT_INVALID', 'file: is required');
      const row = await execute(ctx, request, recordAttachment, { caseId: c.id, filename: filename!, description, stored, limits });
      return reply.code(201).send(attachmentView(row));
    },
  );

  app.get(
    '/cases/:id/attachments',
    {
      config: { permission: 'evidence.read', summary: "A case's attachments, oldest first (counts: attached, redacted)" },
      schema: {
        params: CaseParams,
        querystring: Strict(PageQuery),
        response: { 200: PageOf('attachments', Attachment, Type.Object({ attached: Type.Integer(), redacted: Type.Integer() })), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'attachments', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const c = await caseOr404(snap, tenantId, request.params.id, getCase);
        const { rows, counts } = await listAttachments(snap, tenantId, c.id, limit, offset);
        return { items: rows.map(attachmentView), total: counts.attached + counts.redacted, counts };
      }),
  );

  const attachmentOr404 = (tenantId: string, caseId: string, aid: string) => caseRecordOr404(db, tenantId, caseId, 'attachment', aid, getAttachment);

  app.get(
    '/cases/:id/attachments/:aid',
    {
      config: { permission: 'evidence.read', summary: 'One attachment' },
      schema: { params: AttachmentParams, response: { 200: Attachment, ...ErrorResponses } },
    },
    async (request) => attachmentView(await attachmentOr404(principalOf(request).tenantId, request.params.id, request.params.aid)),
  );

  app.get(
    '/cases/:id/attachments/:aid/content',
    {
      config: { permission: 'evidence.read', summary: 'The bytes of an attachment (410 once redacted)' },
      schema: { params: AttachmentParams },
    },
    async (request, reply) => {
      const a = await attachmentOr404(principalOf(request).tenantId, request.params.id, request.params.aid);
      if (a.redacted_at !== null) throw new ServerError('ATTACHMENT_REDACTED', `attachment ${a.id} was redacted at ${a.redacted_at.toISOString()}`);
      const { stream, totalLength } = await ctx.signingRepo!.blobs.get(a.digest);
      return reply
        .type(a.content_type)
        .header('content-length', totalLength)
        .header('content-disposition', contentDisposition(a.filename))
        .header('x-content-type-options', 'nosniff')
        .send(stream);
    },
  );

  app.post(
    '/cases/:id/attachments/:aid/redaction',
    {
      config: { permission: 'evidence.write', summary: 'Redact an attachment: the record stays with the reason, the bytes are no longer served or exported' },
      schema: {
        params: AttachmentParams,
        body: Strict({ reason: Type.String({ minLength: 1, maxLength: SERVER_LIMITS.cases.longText }) }),
        response: { 200: Attachment, ...ErrorResponses },
      },
    },
    async (request) =>
      attachmentView(
        await execute(ctx, request, redactAttachment, { caseId: request.params.id, attachmentId: request.params.aid, reason: request.body.reason }),
      ),
  );
};
