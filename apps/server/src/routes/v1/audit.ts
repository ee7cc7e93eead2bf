import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { AuditEvent } from '../../resources/audit/schemas.js';
import { auditEventJson, auditPage, iterateAuditEvents } from '../../resources/audit/queries.js';

const Filters = {
  since: Type.Optional(Type.String({ format: 'date-time' })),
  until: Type.Optional(Type.String({ format: 'date-time' })),
  action: Type.Optional(Type.String({ maxLength: 100 })),
};

/** spec §6 rule 1: audit events and audit-trail export (JSON Lines, streamed in keyset batches). */
export const auditRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/audit',
    {
      config: { permission: 'audit.read', summary: 'Audit events, newest first (counts by action in the since/until window)' },
      schema: {
        querystring: Strict({ ...PageQuery, ...Filters }),
        response: { 200: PageOf('events', AuditEvent, Type.Record(Type.String(), Type.Integer())), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'events', async (snap, { limit, offset }) => {
        const p = principalOf(request);
        const { rows, total, counts } = await auditPage(snap, p.tenantId, request.query, limit, offset);
        return { items: rows.map(auditEventJson), total, counts };
      }),
  );

  app.get(
    '/audit/export',
    {
      config: { permission: 'audit.read', summary: 'Audit-trail export, JSON Lines, oldest first' },
      schema: { querystring: Strict(Filters) },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const lines = async function* () {
        for await (const row of iterateAuditEvents(db, p.tenantId, request.query)) yield `${JSON.stringify(auditEventJson(row))}\n`;
      };
      return reply.type('application/jsonl; charset=utf-8').header('content-disposition', 'attachment; filename="audit.jsonl"').send(Readable.from(lines()));
    },
  );
};
