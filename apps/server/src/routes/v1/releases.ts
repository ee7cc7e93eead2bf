import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorBody, ErrorResponses, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { pipelineDeps } from '../../resources/pipeline-deps.js';
import { getRelease, listReleases, submitRelease } from '../../pipeline/releases.js';

const Release = Type.Object(
  {
    id: Uuid,
    product: Type.String(),
    version: Type.String(),
    payload_digest: Type.String(),
    envelope_digest: Type.String(),
    keyid: Type.String(),
    target: Type.String({ description: 'TUF target path of the exact envelope bytes' }),
    created_at: Type.String(),
  },
  { additionalProperties: false },
);

/** spec 4 "Release submission rules": verify, check prerequisites, publish the exact envelope. */
export const releasesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post('/releases', {
    config: { permission: 'releases.write', summary: 'Submit a signed release (DSSE envelope) with the expected product ID' },
    schema: {
      body: Strict({ envelope: Type.Object({}, { additionalProperties: true }), expected_product: Type.String({ minLength: 1, maxLength: 64 }) }),
      response: { 200: Release, 201: Release, ...ErrorResponses },
    },
  }, async (request, reply) => {
    const { release, created } = await submitRelease(pipelineDeps(ctx), principalOf(request).tenantId, request.body);
    if (created) await audit(db, request, { action: 'release.publish', target: `release:${release.id}`, detail: { product: release.product, version: release.version, envelope_digest: release.envelope_digest, keyid: release.keyid } });
    // the identical envelope again is not a new resource: 200 with the existing release
    return reply.code(created ? 201 : 200).send(release);
  });

  app.get('/releases', {
    config: { permission: 'releases.read', summary: 'List releases' },
    schema: {
      querystring: Strict({ ...PageQuery, product: Type.Optional(Type.String({ maxLength: 64 })) }),
      response: { 200: Type.Object({ releases: Type.Array(Release), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(), counts: Type.Record(Type.String(), Type.Integer()) }), ...ErrorResponses },
    },
  }, async (request) => {
    const { limit, offset } = page(request.query);
    const f: { product?: string } = {};
    if (request.query.product !== undefined) f.product = request.query.product;
    return listReleases(db, principalOf(request).tenantId, f, limit, offset);
  });

  app.get('/releases/:id', {
    config: { permission: 'releases.read', summary: 'One release' },
    schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), response: { 200: Release, ...ErrorResponses } },
  }, async (request) => {
    const r = await getRelease(db, principalOf(request).tenantId, request.params.id);
    if (!r) throw notFound(`release ${request.params.id}`);
    return r;
  });
};
