import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, iso, PageQuery, Strict, Timestamp } from '../../http/schemas.js';
import { getArtifact } from '../../resources/artifacts/queries.js';
import { CYCLONEDX_TYPE } from '../../resources/sboms/documents.js';
import { attachVex } from '../../resources/vex/commands.js';
import { OPENVEX_TYPE, VEX_LIMITS } from '../../resources/vex/documents.js';
import { listStatements, type StatementRow } from '../../resources/vex/queries.js';
import { inSnapshot } from '../../store/tx.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });
const Str = Type.Union([Type.String(), Type.Null()]);
const Statement = Type.Object({
  id: Type.String(),
  format: Type.String(),
  document_digest: Type.String(),
  vulnerability: Type.String(),
  component: Str,
  status: Type.String(),
  justification: Str,
  impact_statement: Str,
  action_statement: Str,
  statement_at: Timestamp,
  recorded_at: Timestamp,
  actor: Type.String(),
});
const statementView = (s: StatementRow) => ({
  id: s.id,
  format: s.format,
  document_digest: s.document_digest,
  vulnerability: s.vuln_id,
  component: s.component_purl,
  status: s.status,
  justification: s.justification,
  impact_statement: s.impact_statement,
  action_statement: s.action_statement,
  statement_at: iso(s.statement_at),
  recorded_at: iso(s.recorded_at),
  actor: s.actor,
});

/** VEX on artifacts: statements appended (never rewritten); the latest by statement time sets a finding's status. */
export const vexRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  // documents are hashed as sent: raw bytes, parsed in resources/vex/documents.ts
  app.addContentTypeParser([CYCLONEDX_TYPE, OPENVEX_TYPE], { parseAs: 'buffer', bodyLimit: VEX_LIMITS.maxBytes }, (_req, body, done) => done(null, body));

  app.post(
    '/artifacts/:id/vex',
    {
      config: { permission: 'evidence.write', summary: `Attach a VEX document (${CYCLONEDX_TYPE} or ${OPENVEX_TYPE}) to an artifact` },
      schema: {
        params: IdParams,
        consumes: [CYCLONEDX_TYPE, OPENVEX_TYPE],
        response: {
          201: Type.Object({
            artifact_id: Type.String(),
            format: Type.String(),
            digest: Type.String(),
            statements: Type.Array(Statement),
            findings_applied: Type.Integer(),
          }),
          ...ErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const r = await execute(ctx, request, attachVex, {
        artifactId: request.params.id,
        contentType: String(request.headers['content-type'] ?? ''),
        bytes: request.body as Buffer,
      });
      return reply.code(201).send({
        artifact_id: request.params.id,
        format: r.format,
        digest: r.digest,
        statements: r.statements.map(statementView),
        findings_applied: r.findings_applied,
      });
    },
  );

  app.get(
    '/artifacts/:id/vex',
    {
      config: {
        permission: 'evidence.read',
        summary: "The artifact's VEX statement history, newest statement first (filter: vulnerability; counts by status)",
      },
      schema: {
        params: IdParams,
        querystring: Strict({ ...PageQuery, vulnerability: Type.Optional(Type.String({ maxLength: 128 })) }),
        response: {
          200: Type.Object({
            statements: Type.Array(Statement),
            total: Type.Integer(),
            limit: Type.Integer(),
            offset: Type.Integer(),
            counts: Type.Record(Type.String(), Type.Integer()),
          }),
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      const { limit, offset } = page(request.query);
      // the page, its total and its counts in one snapshot (store/tx.ts inSnapshot)
      const r = await inSnapshot(db, async (snap) => {
        if (!(await getArtifact(snap, tenantId, request.params.id))) throw notFound(`artifact ${request.params.id}`);
        return listStatements(snap, tenantId, request.params.id, request.query.vulnerability, limit, offset);
      });
      return { statements: r.rows.map(statementView), total: r.total, limit, offset, counts: r.counts };
    },
  );
};
