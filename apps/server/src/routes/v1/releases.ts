import { normalizeUuid } from '@svc/release-core';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { publishingDeps } from '../../resources/publishing.js';
import { prepareRelease, publishRelease } from '../../resources/releases/commands.js';
import { getReleaseRow, releaseCountsByProduct, releasePage } from '../../resources/releases/queries.js';
import { releaseJson } from '../../resources/releases/views.js';
import { Release } from '../../resources/releases/schemas.js';

/** spec §4 "Release submission rules": verify, check prerequisites, publish the exact envelope. */
export const releasesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post(
    '/releases',
    {
      config: { permission: 'releases.write', summary: 'Submit a signed release (DSSE envelope) with the expected product ID' },
      schema: {
        body: Strict({ envelope: Type.Object({}, { additionalProperties: true }), expected_product: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: Release, 201: Release, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      // spec §1 rule 2: the envelope enters the signing repository before the record exists
      const prepared = await prepareRelease(publishingDeps(ctx), principalOf(request).tenantId, request.body);
      // the identical envelope again is not a new resource: 200 with the existing release
      if ('existing' in prepared) return reply.code(200).send(prepared.existing);
      const { release, created } = await execute(ctx, request, publishRelease, prepared.record);
      return reply.code(created ? 201 : 200).send(release);
    },
  );

  app.get(
    '/releases',
    {
      config: { permission: 'releases.read', summary: 'List releases (product filter; total, counts by product)' },
      schema: {
        querystring: Strict({ ...PageQuery, product: Type.Optional(Type.String({ maxLength: 64 })) }),
        response: { 200: PageOf('releases', Release, Type.Record(Type.String(), Type.Integer())), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'releases', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const [{ rows, total }, counts] = await Promise.all([
          releasePage(snap, tenantId, { product: request.query.product }, limit, offset),
          releaseCountsByProduct(snap, tenantId),
        ]);
        return { items: rows.map(releaseJson), total, counts };
      }),
  );

  app.get(
    '/releases/:id',
    {
      config: { permission: 'releases.read', summary: 'One release' },
      schema: { params: Strict({ id: Type.String({ maxLength: 64 }) }), response: { 200: Release, ...ErrorResponses } },
    },
    async (request) => {
      const id = request.params.id;
      const uuid = normalizeUuid(id);
      const r = uuid === undefined ? undefined : await getReleaseRow(db, principalOf(request).tenantId, uuid);
      if (!r) throw notFound(`release ${id}`);
      return releaseJson(r);
    },
  );
};
