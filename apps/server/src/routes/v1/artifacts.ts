import multipart from '@fastify/multipart';
import { ARTIFACT_KINDS, type Digest } from '@svc/release-core';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { multipartParts } from '../../http/multipart.js';
import { listPage } from '../../http/pagination.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { recordPublishedArtifact, updateArtifactFields } from '../../resources/artifacts/commands.js';
import { checkArtifactFields } from '../../resources/artifacts/fields.js';
import { publishArtifactTarget, storeArtifactBytes } from '../../resources/artifacts/publication.js';
import { artifactKindCounts, getArtifact, listArtifacts } from '../../resources/artifacts/queries.js';
import { artifactView } from '../../resources/artifacts/views.js';
import { publishingDeps } from '../../resources/publishing.js';
import { SEVERITIES, SEVERITY_RANK } from '../../resources/vulnerabilities/severity.js';
import { Artifact, KindCounts } from '../../resources/artifacts/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });
const TEXT_FIELDS = new Set(['name', 'version', 'kind', 'media_type']);

/**
 * spec §1 rule 2, 4: publish (multipart, streamed into the blob store, signed before recorded), list
 * with kind and vulnerability-severity filters, patch of description/labels.
 */
export const artifactsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const maxBytes = ctx.publishing?.maxArtifactBytes ?? SERVER_LIMITS.artifactBytes;
  // one file per request; the blob store enforces the byte cap while hashing
  await app.register(multipart, { limits: { files: 1, fields: 8, fieldSize: 1024, parts: 10, fileSize: maxBytes + 1 }, throwFileSizeLimit: false });

  app.post(
    '/artifacts',
    {
      config: { permission: 'artifacts.write', summary: 'Publish an artifact (multipart: name, version, kind, media_type?, file)' },
      schema: { consumes: ['multipart/form-data'], response: { 201: Artifact, ...ErrorResponses } },
    },
    async (request, reply) => {
      if (!request.isMultipart()) throw new ServerError('ARTIFACT_INVALID', 'body: must be multipart/form-data with name, version, kind, media_type? and file');
      const deps = publishingDeps(ctx);
      const tenantId = principalOf(request).tenantId;
      const fields: Record<string, string> = {};
      let blob: { digest: Digest; length: number } | undefined;
      let filename: string | undefined;
      for await (const part of multipartParts(request)) {
        if (part.type === 'file') {
          if (part.fieldname !== 'file') throw new ServerError('ARTIFACT_INVALID', `${part.fieldname}: unknown file field (send the bytes as "file")`);
          filename = part.filename;
          // streamed: hashed on the way into the blob store, never held whole in memory
          blob = await storeArtifactBytes(deps, part.bytes);
          if (part.truncated()) throw new ServerError('ARTIFACT_TOO_LARGE', `file: larger than the ${maxBytes}-byte upload limit`);
        } else {
          if (!TEXT_FIELDS.has(part.fieldname)) throw new ServerError('ARTIFACT_INVALID', `${part.fieldname}: unknown field`);
          fields[part.fieldname] = part.value;
        }
      }
      if (!blob) throw new ServerError('ARTIFACT_INVALID', 'file: is required');
      const checked = checkArtifactFields({ ...fields, filename });
      // spec §1 rule 2: the signed target is committed before the record and its audit row
      const published = await publishArtifactTarget(deps, tenantId, checked, blob);
      return reply.code(201).send(await execute(ctx, request, recordPublishedArtifact, published));
    },
  );

  app.get(
    '/artifacts',
    {
      config: { permission: 'artifacts.read', summary: 'List artifacts (filters: kind, severity, q; total, counts by kind)' },
      schema: {
        querystring: Strict({
          ...PageQuery,
          kind: Type.Optional(Type.Union(ARTIFACT_KINDS.map((k) => Type.Literal(k)))),
          severity: Type.Optional(
            Type.Union(
              SEVERITIES.map((s) => Type.Literal(s)),
              { description: 'artifacts with a finding at or above this severity that VEX has not closed (not not_affected, not fixed)' },
            ),
          ),
          q: Type.Optional(Type.String({ maxLength: 128 })),
        }),
        response: { 200: PageOf('artifacts', Artifact, KindCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'artifacts', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const { kind, severity, q } = request.query;
        const { rows, total } = await listArtifacts(
          snap,
          tenantId,
          { kind, minSeverityRank: severity === undefined ? undefined : SEVERITY_RANK[severity], q },
          limit,
          offset,
        );
        // spec §8: total counts the filtered set, counts break down the tenant's whole set
        return { items: rows.map(artifactView), total, counts: await artifactKindCounts(snap, tenantId) };
      }),
  );

  app.get(
    '/artifacts/:id',
    {
      config: { permission: 'artifacts.read', summary: 'One artifact' },
      schema: { params: IdParams, response: { 200: Artifact, ...ErrorResponses } },
    },
    async (request) => {
      const a = await getArtifact(db, principalOf(request).tenantId, request.params.id);
      if (!a) throw notFound(`artifact ${request.params.id}`);
      return artifactView(a);
    },
  );

  app.patch(
    '/artifacts/:id',
    {
      config: {
        permission: 'artifacts.write',
        summary: 'Update description and labels (name, version, digest are immutable); 204, or 200 with Prefer: return=representation',
      },
      // unknown and immutable fields are refused by the command naming the field (400)
      schema: {
        params: IdParams,
        body: Type.Object({}, { additionalProperties: true, maxProperties: 16 }),
        response: { ...updateResponses(Artifact), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const a = await execute(ctx, request, updateArtifactFields, { id: request.params.id, body: request.body as Record<string, unknown> });
      return sendUpdated(request, reply, () => a);
    },
  );
};
