import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { getArtifact } from '../../resources/artifacts/queries.js';
import { attachSbom } from '../../resources/sboms/commands.js';
import { CYCLONEDX_TYPE, SPDX_TYPE } from '../../resources/sboms/documents.js';
import { getSbom, listComponents } from '../../resources/sboms/queries.js';
import { Component, SbomAttached } from '../../resources/sboms/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec §1 rule 6, spec §4: SBOMs attached and downloaded in their native content types; the component index. */
export const sbomsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  // the document is kept byte-exact: parse as raw bytes, validate in resources/sboms/documents.ts
  app.addContentTypeParser([CYCLONEDX_TYPE, SPDX_TYPE], { parseAs: 'buffer', bodyLimit: SERVER_LIMITS.sboms.maxBytes }, (_req, body, done) => done(null, body));

  app.put(
    '/artifacts/:id/sbom',
    {
      config: { permission: 'artifacts.write', summary: `Attach an SBOM (${CYCLONEDX_TYPE} 1.4-1.6 or ${SPDX_TYPE} 2.3), index its components and match them` },
      schema: {
        params: IdParams,
        consumes: [CYCLONEDX_TYPE, SPDX_TYPE],
        response: {
          200: SbomAttached,
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const r = await execute(ctx, request, attachSbom, {
        artifactId: request.params.id,
        contentType: String(request.headers['content-type'] ?? ''),
        bytes: request.body as Buffer,
      });
      return { artifact_id: request.params.id, ...r };
    },
  );

  app.get(
    '/artifacts/:id/sbom',
    {
      config: { permission: 'artifacts.read', summary: 'Download the attached SBOM in its native content type' },
      schema: { params: IdParams, response: { 200: Type.Unknown({ description: `${CYCLONEDX_TYPE} or ${SPDX_TYPE}` }), ...ErrorResponses } },
    },
    async (request, reply) => {
      const s = await getSbom(db, principalOf(request).tenantId, request.params.id);
      if (!s) throw notFound(`SBOM of artifact ${request.params.id}`);
      return reply.type(s.contentType).send(Buffer.from(s.bytes));
    },
  );

  app.get(
    '/artifacts/:id/components',
    {
      config: { permission: 'artifacts.read', summary: "The artifact's component index (filters: ecosystem, purl; counts by ecosystem over the artifact)" },
      schema: {
        params: IdParams,
        querystring: Strict({ ...PageQuery, ecosystem: Type.Optional(Type.String({ maxLength: 64 })), purl: Type.Optional(Type.String({ maxLength: 1024 })) }),
        response: { 200: PageOf('components', Component, Type.Record(Type.String(), Type.Integer())), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'components', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        if (!(await getArtifact(snap, tenantId, request.params.id))) throw notFound(`artifact ${request.params.id}`);
        const r = await listComponents(snap, tenantId, request.params.id, { ecosystem: request.query.ecosystem, purl: request.query.purl }, limit, offset);
        return {
          items: r.rows.map((c) => ({
            purl: c.purl,
            package_key: c.package_key,
            ecosystem: c.ecosystem,
            release: c.release,
            name: c.name,
            version: c.version,
            licenses: c.licenses,
            hashes: c.hashes,
          })),
          total: r.total,
          counts: r.counts,
        };
      }),
  );
};
