import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { AppContext, V1Routes } from '../../http/context.js';
import { actorOf, execute } from '../../http/execute.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { caseExportStream, EVIDENCE_MANIFEST_TYPE } from '../../resources/case-exports/archive.js';
import { recordCaseExport } from '../../resources/case-exports/commands.js';
import { evidenceKey } from '../../resources/case-exports/evidence-key.js';
import { caseOr404 } from '../../resources/cases/commands.js';
import { getCase, latestAuditSeq } from '../../resources/cases/queries.js';
import type { SigningRepository } from '../../signing-repo/index.js';

function repoOf(ctx: AppContext): SigningRepository {
  if (ctx.signingRepo === undefined) throw new Error('AppContext.signingRepo (its key directory and blob store) is required by the case export routes');
  return ctx.signingRepo;
}

/** Case export (docs/article-14.md "Case export"): one signed, streamed tar per case, and the public key that verifies it. */
export const caseExportsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/evidence-key',
    {
      config: { permission: 'evidence.read', summary: "The tenant's evidence public key: it verifies case-export manifests (svc-release verify-evidence)" },
      schema: {
        response: {
          200: Type.Object({ keyid: Type.String(), algorithm: Type.Literal('ed25519'), payload_type: Type.String(), public_key_pem: Type.String() }),
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const key = await evidenceKey(repoOf(ctx).keys.root, principalOf(request).tenantId);
      return { keyid: key.keyid, algorithm: 'ed25519' as const, payload_type: EVIDENCE_MANIFEST_TYPE, public_key_pem: key.publicKeyPem };
    },
  );

  app.get(
    '/cases/:id/export',
    {
      config: {
        permission: 'evidence.read',
        summary: 'The evidence archive of a case (tar, streamed): every record, document, PDF, attachment, receipt and audit event, with a signed manifest',
      },
      schema: {
        params: Strict({ id: Type.String({ maxLength: 64 }) }),
        response: { 200: Type.Unknown({ description: 'application/x-tar' }), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const tenantId = principalOf(request).tenantId;
      const repo = repoOf(ctx);
      const c = await caseOr404(db, tenantId, request.params.id, getCase);
      // the key is ready (created on first use) before the audit row and the first byte
      const key = await evidenceKey(repo.keys.root, tenantId);
      const { exportedAt } = await execute(ctx, request, recordCaseExport, { caseId: c.id, keyid: key.keyid });
      const auditCutoff = await latestAuditSeq(db, tenantId);
      const fresh = await caseOr404(db, tenantId, c.id, getCase);
      void reply
        .type('application/x-tar')
        .header('content-disposition', `attachment; filename="case-${c.id}-${exportedAt.toISOString().replace(/[:.]/g, '')}.tar"`);
      return reply.send(caseExportStream({ db, blobs: repo.blobs, tenantId, caseRow: fresh, exportedAt, exportedBy: actorOf(request).name, auditCutoff, key }));
    },
  );
};
