import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { attachSbom } from '../../resources/sboms/commands.js';
import { CYCLONEDX_TYPE, MAX_SBOM_BYTES, SPDX_TYPE } from '../../resources/sboms/documents.js';
import { getSbom } from '../../resources/sboms/queries.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec 1.6, 4: SBOMs attached and downloaded in their native content types. */
export const sbomsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  // the document is kept byte-exact: parse as raw bytes, validate in resources/sboms/documents.ts
  app.addContentTypeParser([CYCLONEDX_TYPE, SPDX_TYPE], { parseAs: 'buffer', bodyLimit: MAX_SBOM_BYTES }, (_req, body, done) => done(null, body));

  app.put('/artifacts/:id/sbom', {
    config: { permission: 'artifacts.write', summary: `Attach an SBOM (${CYCLONEDX_TYPE} or ${SPDX_TYPE})` },
    schema: {
      params: IdParams,
      consumes: [CYCLONEDX_TYPE, SPDX_TYPE],
      response: { 200: Type.Object({ artifact_id: Type.String(), format: Type.String(), digest: Type.String(), severities: Type.Array(Type.String()) }), ...ErrorResponses },
    },
  }, async (request) => {
    const r = await execute(ctx, request, attachSbom, { artifactId: request.params.id, contentType: String(request.headers['content-type'] ?? ''), bytes: request.body as Buffer });
    return { artifact_id: request.params.id, ...r };
  });

  app.get('/artifacts/:id/sbom', {
    config: { permission: 'artifacts.read', summary: 'Download the attached SBOM in its native content type' },
    schema: { params: IdParams, response: { 200: Type.Unknown({ description: `${CYCLONEDX_TYPE} or ${SPDX_TYPE}` }), ...ErrorResponses } },
  }, async (request, reply) => {
    const s = await getSbom(db, principalOf(request).tenantId, request.params.id);
    if (!s) throw notFound(`SBOM of artifact ${request.params.id}`);
    return reply.type(s.contentType).send(Buffer.from(s.bytes));
  });
};
