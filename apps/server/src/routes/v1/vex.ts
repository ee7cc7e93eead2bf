import { Type } from 'typebox';
import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { principalOf } from '../../auth/principal.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { getArtifact } from '../../resources/artifacts/queries.js';
import { getBranding } from '../../resources/branding/queries.js';
import { tenantName } from '../../resources/cases/queries.js';
import { CYCLONEDX_TYPE } from '../../resources/sboms/documents.js';
import { attachVex } from '../../resources/vex/commands.js';
import { OPENVEX_TYPE } from '../../resources/vex/documents.js';
import { renderVex, VEX_EXPORT_FORMATS, vexModel, type VexExportFormat } from '../../resources/vex/exports.js';
import {
  artifactProducts,
  exportArtifacts,
  exportFindings,
  listStatements,
  productExists,
  productReleases,
  statementsOf,
  type StatementRow,
} from '../../resources/vex/queries.js';
import { inSnapshot } from '../../store/tx.js';
import { Statement, VexAttached, type StatementView } from '../../resources/vex/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });
const statementView = (s: StatementRow): StatementView => ({
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
  app.addContentTypeParser([CYCLONEDX_TYPE, OPENVEX_TYPE], { parseAs: 'buffer', bodyLimit: SERVER_LIMITS.vex.maxBytes }, (_req, body, done) =>
    done(null, body),
  );

  app.post(
    '/artifacts/:id/vex',
    {
      config: { permission: 'evidence.write', summary: `Attach a VEX document (${CYCLONEDX_TYPE} or ${OPENVEX_TYPE}) to an artifact` },
      schema: {
        params: IdParams,
        consumes: [CYCLONEDX_TYPE, OPENVEX_TYPE],
        response: {
          201: VexAttached,
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
          200: PageOf('statements', Statement, Type.Record(Type.String(), Type.Integer()), {
            after: {
              products: Type.Array(Type.String(), {
                description: 'the products whose releases name the artifact: each has a VEX export, GET /products/{product}/vex',
              }),
            },
          }),
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      return listPage(db, request.query, 'statements', async (snap, { limit, offset }) => {
        if (!(await getArtifact(snap, tenantId, request.params.id))) throw notFound(`artifact ${request.params.id}`);
        const [list, products] = await Promise.all([
          listStatements(snap, tenantId, request.params.id, request.query.vulnerability, limit, offset),
          artifactProducts(snap, tenantId, request.params.id),
        ]);
        return { items: list.rows.map(statementView), total: list.total, counts: list.counts, products };
      });
    },
  );

  app.get(
    '/products/:product/vex',
    {
      config: {
        permission: 'evidence.read',
        summary: "A product's VEX (the statements in effect on the artifacts its releases name) as CSAF 2.0 csaf_vex, OpenVEX 0.2.0 or CycloneDX 1.6",
      },
      schema: {
        params: Strict({ product: Type.String({ pattern: IDENTIFIER_PATTERNS.product.source, description: 'a release product' }) }),
        querystring: Strict({
          format: Type.Optional(
            Type.Union(
              VEX_EXPORT_FORMATS.map((f) => Type.Literal(f)),
              { description: 'csaf (default): CSAF 2.0 csaf_vex; openvex: OpenVEX 0.2.0; cyclonedx: CycloneDX 1.6 VEX' },
            ),
          ),
        }),
        response: {
          200: Type.Unknown({ description: `application/json (CSAF), ${OPENVEX_TYPE} or ${CYCLONEDX_TYPE}; version=1.6, as an attachment` }),
          ...ErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const tenantId = principalOf(request).tenantId;
      const product = request.params.product;
      const format: VexExportFormat = request.query.format ?? 'csaf';
      // the publisher's namespace: the origin of SVC_CSAF_BASE_URL, else the host the request came to, over https (CSAF 2.0 7.1.3: TLS)
      const base = ctx.evidence?.csafBaseUrl;
      const namespace = base !== undefined ? new URL(base).origin : `https://${request.host}`;
      const facts = await inSnapshot(db, async (snap) => {
        if (!(await productExists(snap, tenantId, product))) throw new ServerError('NOT_FOUND', `product: no release of product ${product}`);
        const releases = await productReleases(snap, tenantId, product);
        const ids = [...new Set(releases.flatMap((r) => r.artifact_ids))];
        const [artifacts, statements, findings, branding, tenant] = await Promise.all([
          exportArtifacts(snap, tenantId, ids),
          statementsOf(snap, tenantId, ids, SERVER_LIMITS.vexExport.maxStatements + 1),
          exportFindings(snap, tenantId, ids),
          getBranding(snap, tenantId),
          tenantName(snap, tenantId),
        ]);
        return { releases, artifacts, statements, findings, publisherName: branding.company_name.trim() || tenant || 'Manufacturer' };
      });
      if (facts.statements.length > SERVER_LIMITS.vexExport.maxStatements)
        throw new ServerError('INVALID_INPUT', `product: ${product} has more than ${SERVER_LIMITS.vexExport.maxStatements} VEX statements on its artifacts`);
      const model = vexModel({ product, namespace, csafBaseUrl: base, now: ctx.now(), ...facts });
      if (model.vulnerabilities.length === 0) throw new ServerError('NOT_FOUND', `product: no VEX statement on the artifacts of the releases of ${product}`);
      const out = renderVex(model, format);
      return reply.type(out.contentType).header('content-disposition', `attachment; filename="${out.filename}"`).send(out.body);
    },
  );
};
