import { Type } from 'typebox';
import { digestHex, IDENTIFIER_PATTERNS, type Digest } from '@svc/release-core';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { notFound } from '../../errors/server-error.js';
import { execute } from '../../http/execute.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { generateReport } from '../../resources/reports/commands.js';
import { REPORT_FORMATS, REPORT_KINDS, REPORT_TITLES, type ReportFormat, type ReportKind } from '../../resources/reports/document.js';
import { serveReportFile } from '../../resources/reports/file.js';
import { reportTwinRecorded } from '../../resources/reports/queries.js';
import { rootKeyOnServer } from '../../resources/reports/readiness.js';
import { SEVERITIES } from '../../resources/vulnerabilities/severity.js';

const Product = Type.String({
  pattern: IDENTIFIER_PATTERNS.product.source,
  description: "only this product: its releases' artifacts, the devices running them, its cases",
});
const QUERIES: Record<ReportKind, ReturnType<typeof Strict>> = {
  vulnerability: Strict({
    product: Type.Optional(Product),
    severity: Type.Optional(
      Type.Union(
        SEVERITIES.map((s) => Type.Literal(s)),
        { description: 'list findings at or above this severity (counts stay complete)' },
      ),
    ),
  }),
  readiness: Strict({ product: Type.Optional(Product) }),
};
const DESCRIPTIONS: Record<ReportFormat, string> = {
  pdf: 'the branded PDF (application/pdf)',
  json: 'the JSON twin: the same data as the PDF (application/json)',
};

/**
 * The readiness and vulnerability reports (docs/reports.md): `GET /reports/<kind>.pdf` and its
 * JSON twin `GET /reports/<kind>.json`. Each generation is audited (`report.generate`, with the
 * SHA-256 of the bytes served, also sent as `Repr-Digest`).
 */
export const reportsRoutes: V1Routes = async (app, { ctx }) => {
  for (const kind of REPORT_KINDS) {
    for (const format of REPORT_FORMATS) {
      app.get(
        `/reports/${kind}.${format}`,
        {
          config: { permission: 'evidence.read', summary: `${REPORT_TITLES[kind]}: ${DESCRIPTIONS[format]}` },
          schema: { querystring: QUERIES[kind], response: { 200: Type.Unknown({ description: DESCRIPTIONS[format] }), ...ErrorResponses } },
        },
        async (request, reply) => {
          const q = request.query as { product?: string; severity?: (typeof SEVERITIES)[number] };
          const tenantId = principalOf(request).tenantId;
          const r = await execute(ctx, request, generateReport, {
            kind,
            format,
            scope: { product: q.product, severity: q.severity },
            rootKeyOnServer: kind === 'readiness' ? await rootKeyOnServer(ctx.signingRepo, tenantId) : null,
            ...(format === 'pdf' && ctx.signingRepo !== undefined ? { twins: ctx.signingRepo.blobs } : {}),
          });
          void reply
            .type(r.contentType)
            .header('content-length', r.bytes)
            .header('content-disposition', `attachment; filename="${r.filename}"`)
            // RFC 9530: the digest of the bytes served, as on the audit row
            .header('repr-digest', `sha-256=:${Buffer.from(digestHex(r.sha256), 'hex').toString('base64')}:`)
            .header('cache-control', 'no-store');
          return reply.send(serveReportFile(r.path));
        },
      );
    }
  }

  app.get(
    '/reports/twins/:digest',
    {
      config: {
        permission: 'evidence.read',
        summary: "The JSON twin a generated PDF report carries, byte for byte, by its digest (the report's audit row names it: twin_sha256)",
      },
      schema: {
        params: Strict({ digest: Type.Unsafe<Digest>(Type.String({ pattern: '^sha256:[0-9a-f]{64}$', description: 'sha256:<64 lowercase hex>' })) }),
        response: { 200: Type.Unknown({ description: 'the JSON twin (application/json)' }), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const { digest } = request.params;
      const tenantId = principalOf(request).tenantId;
      if (ctx.signingRepo === undefined || !(await reportTwinRecorded(ctx.store.db, tenantId, digest))) throw notFound(`report twin ${digest}`);
      const { stream, totalLength } = await ctx.signingRepo.blobs.get(digest);
      return reply
        .type('application/json')
        .header('content-length', totalLength)
        .header('repr-digest', `sha-256=:${Buffer.from(digestHex(digest), 'hex').toString('base64')}:`)
        .header('cache-control', 'no-store')
        .send(stream);
    },
  );
};
