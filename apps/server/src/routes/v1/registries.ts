import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { pipelineDeps } from '../../resources/pipeline-deps.js';
import { browseTags, createRegistry, importImage, listRegistries } from '../../pipeline/registries.js';
import { Artifact } from './artifacts.js';

const Registry = Type.Object(
  { id: Uuid, name: Type.String(), url: Type.String(), credentials_ref: Type.Union([Type.String(), Type.Null()]), created_at: Type.String() },
  { additionalProperties: false },
);
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec 4: OCI registries - create, list, tag browse, import into a container artifact. */
export const registriesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post('/registries', {
    config: { permission: 'registries.write', summary: 'Register an OCI registry (credentials by reference: env:<VARIABLE>)' },
    schema: { body: Strict({ name: Type.String({ minLength: 1, maxLength: 64 }), url: Type.String({ minLength: 1, maxLength: 2048 }), credentials_ref: Type.Optional(Type.String({ maxLength: 160 })) }), response: { 201: Registry, ...ErrorResponses } },
  }, async (request, reply) => {
    const r = await createRegistry(db, principalOf(request).tenantId, request.body, ctx.now());
    await audit(db, request, { action: 'registry.create', target: `registry:${r.id}`, detail: { name: r.name, url: r.url } });
    return reply.code(201).send(r);
  });

  app.get('/registries', {
    config: { permission: 'registries.read', summary: 'List registries' },
    schema: { querystring: Strict({ ...PageQuery }), response: { 200: Type.Object({ registries: Type.Array(Registry), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(), counts: Type.Object({ registries: Type.Integer() }) }), ...ErrorResponses } },
  }, async (request) => {
    const { limit, offset } = page(request.query);
    const r = await listRegistries(db, principalOf(request).tenantId, limit, offset);
    return { ...r, limit, offset, counts: { registries: r.total } };
  });

  app.get('/registries/:id/tags', {
    config: { permission: 'registries.read', summary: 'Browse the tags of a repository' },
    schema: { params: IdParams, querystring: Strict({ repository: Type.String({ minLength: 1, maxLength: 255 }) }), response: { 200: Type.Object({ repository: Type.String(), tags: Type.Array(Type.String()) }), ...ErrorResponses } },
  }, async (request) => browseTags(db, principalOf(request).tenantId, request.params.id, request.query.repository));

  app.post('/registries/:id/import', {
    config: { permission: 'artifacts.write', summary: 'Import an image (manifest + blobs) as a container artifact (OCI layout tar)' },
    schema: {
      params: IdParams,
      body: Strict({ repository: Type.String({ minLength: 1, maxLength: 255 }), tag: Type.String({ minLength: 1, maxLength: 128 }), name: Type.Optional(Type.String({ maxLength: 63 })), version: Type.Optional(Type.String({ maxLength: 64 })) }),
      response: { 201: Artifact, ...ErrorResponses },
    },
  }, async (request, reply) => {
    const a = await importImage(pipelineDeps(ctx), principalOf(request).tenantId, request.params.id, request.body);
    await audit(db, request, { action: 'artifact.import', target: `artifact:${a.id}`, detail: { registry: request.params.id, repository: request.body.repository, tag: request.body.tag, digest: a.digest } });
    return reply.code(201).send(a);
  });
};
