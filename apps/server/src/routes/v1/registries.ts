import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { publishingDeps } from '../../resources/publishing.js';
import { createRegistry, recordImportedArtifact } from '../../resources/registries/commands.js';
import { listRegistries, registryCounts } from '../../resources/registries/queries.js';
import { browseTags, publishImportedImage } from '../../resources/registries/remote.js';
import { registryView } from '../../resources/registries/views.js';
import { Artifact } from '../../resources/artifacts/schemas.js';
import { Registry, RegistryCounts, RegistryTags } from '../../resources/registries/schemas.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec §4: OCI registries - create, list, tag browse, import into a container artifact. */
export const registriesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post(
    '/registries',
    {
      config: { permission: 'registries.write', summary: 'Register an OCI registry (credentials by reference: env:<VARIABLE>)' },
      schema: {
        body: Strict({
          name: Type.String({ minLength: 1, maxLength: 64 }),
          url: Type.String({ minLength: 1, maxLength: 2048 }),
          credentials_ref: Type.Optional(Type.String({ maxLength: 160 })),
        }),
        response: { 201: Registry, ...ErrorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await execute(ctx, request, createRegistry, request.body)),
  );

  app.get(
    '/registries',
    {
      config: { permission: 'registries.read', summary: 'List registries (total, counts by scheme and by credentials)' },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: { 200: PageOf('registries', Registry, RegistryCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'registries', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const rows = await listRegistries(snap, tenantId, limit, offset);
        const c = await registryCounts(snap, tenantId);
        return {
          items: rows.map(registryView),
          total: c.total,
          counts: { https: c.total - c.http, http: c.http, authenticated: c.authenticated, anonymous: c.total - c.authenticated },
        };
      }),
  );

  app.get(
    '/registries/:id/tags',
    {
      config: { permission: 'registries.read', summary: 'Browse the tags of a repository' },
      schema: {
        params: IdParams,
        querystring: Strict({ repository: Type.String({ minLength: 1, maxLength: 255 }) }),
        response: { 200: RegistryTags, ...ErrorResponses },
      },
    },
    async (request) => browseTags(db, principalOf(request).tenantId, request.params.id, request.query.repository),
  );

  app.post(
    '/registries/:id/import',
    {
      config: {
        permission: 'artifacts.write',
        summary: 'Import an image (manifest + blobs) as a container artifact (OCI layout tar); an SBOM it carries as an OCI referrer is attached',
      },
      schema: {
        params: IdParams,
        body: Strict({
          repository: Type.String({ minLength: 1, maxLength: 255 }),
          tag: Type.String({ minLength: 1, maxLength: 128 }),
          name: Type.Optional(Type.String({ maxLength: 63 })),
          version: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 201: Artifact, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const { repository, tag } = request.body;
      // spec §1 rule 2: the image's signed target is committed before the record and its audit row
      const { artifact, sbom } = await publishImportedImage(publishingDeps(ctx), principalOf(request).tenantId, request.params.id, request.body);
      return reply.code(201).send(await execute(ctx, request, recordImportedArtifact, { artifact, registry: request.params.id, repository, tag, sbom }));
    },
  );
};
