import multipart from '@fastify/multipart';
import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { multipartParts } from '../../http/multipart.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { listArtifacts, patchArtifact } from '../../pipeline/artifact-list.js';
import { ARTIFACT_KINDS, checkArtifactFields, getArtifact, publishArtifact, storeArtifactBytes } from '../../pipeline/artifacts.js';
import { DEFAULT_MAX_ARTIFACT_BYTES, pipelineDeps } from '../../pipeline/deps.js';
import { PipelineError } from '../../pipeline/errors.js';
import { SEVERITIES } from '../../pipeline/sbom.js';

export const Artifact = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    version: Type.String(),
    kind: Type.String(),
    digest: Type.String(),
    length: Type.Integer(),
    media_type: Type.String(),
    target: Type.String({ description: 'TUF target path' }),
    filename: Type.String(),
    source: Type.String({ description: '"upload" or "registry:<id>"' }),
    description: Type.Union([Type.String(), Type.Null()]),
    labels: Type.Record(Type.String(), Type.String()),
    has_sbom: Type.Boolean(),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
);
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });
const TEXT_FIELDS = new Set(['name', 'version', 'kind', 'media_type']);

/**
 * spec 1.2, 4: publish (multipart, streamed into the blob store, signed before recorded), list
 * with kind and vulnerability-severity filters, patch of description/labels.
 */
export const artifactsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const maxBytes = ctx.pipeline?.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
  // one file per request; the blob store enforces the byte cap while hashing
  await app.register(multipart, { limits: { files: 1, fields: 8, fieldSize: 1024, parts: 10, fileSize: maxBytes + 1 }, throwFileSizeLimit: false });

  app.post('/artifacts', {
    config: { permission: 'artifacts.write', summary: 'Publish an artifact (multipart: name, version, kind, media_type?, file)' },
    schema: { consumes: ['multipart/form-data'], response: { 201: Artifact, ...ErrorResponses } },
  }, async (request, reply) => {
    if (!request.isMultipart()) throw new PipelineError('ARTIFACT_INVALID', 'body: must be multipart/form-data with name, version, kind, media_type? and file');
    const deps = pipelineDeps(ctx);
    const tenantId = principalOf(request).tenantId;
    const fields: Record<string, string> = {};
    let blob: { digest: string; length: number } | undefined;
    let filename: string | undefined;
    for await (const part of multipartParts(request)) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') throw new PipelineError('ARTIFACT_INVALID', `${part.fieldname}: unknown file field (send the bytes as "file")`);
        filename = part.filename;
        // streamed: hashed on the way into the blob store, never held whole in memory
        blob = await storeArtifactBytes(deps, part.bytes);
        if (part.truncated()) throw new PipelineError('ARTIFACT_TOO_LARGE', `file: larger than the ${maxBytes}-byte upload limit`);
      } else {
        if (!TEXT_FIELDS.has(part.fieldname)) throw new PipelineError('ARTIFACT_INVALID', `${part.fieldname}: unknown field`);
        fields[part.fieldname] = part.value;
      }
    }
    if (!blob) throw new PipelineError('ARTIFACT_INVALID', 'file: is required');
    const checked = checkArtifactFields({ ...fields, filename });
    const artifact = await publishArtifact(deps, tenantId, checked, blob);
    await audit(db, request, { action: 'artifact.publish', target: `artifact:${artifact.id}`, detail: { name: artifact.name, version: artifact.version, kind: artifact.kind, digest: artifact.digest, target: artifact.target } });
    return reply.code(201).send(artifact);
  });

  app.get('/artifacts', {
    config: { permission: 'artifacts.read', summary: 'List artifacts (filters: kind, severity, q)' },
    schema: {
      querystring: Strict({
        ...PageQuery,
        kind: Type.Optional(Type.Union(ARTIFACT_KINDS.map((k) => Type.Literal(k)))),
        severity: Type.Optional(Type.Union(SEVERITIES.map((s) => Type.Literal(s)), { description: 'artifacts whose SBOM lists a vulnerability of this severity' })),
        q: Type.Optional(Type.String({ maxLength: 128 })),
      }),
      response: { 200: Type.Object({ artifacts: Type.Array(Artifact), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(), counts: Type.Record(Type.String(), Type.Integer()) }), ...ErrorResponses },
    },
  }, async (request) => {
    const { limit, offset } = page(request.query);
    const { kind, severity, q } = request.query;
    const f: { kind?: string; severity?: string; q?: string } = {};
    if (kind !== undefined) f.kind = kind;
    if (severity !== undefined) f.severity = severity;
    if (q !== undefined) f.q = q;
    return listArtifacts(db, principalOf(request).tenantId, f, limit, offset);
  });

  app.get('/artifacts/:id', {
    config: { permission: 'artifacts.read', summary: 'One artifact' },
    schema: { params: IdParams, response: { 200: Artifact, ...ErrorResponses } },
  }, async (request) => {
    const a = await getArtifact(db, principalOf(request).tenantId, request.params.id);
    if (!a) throw notFound(`artifact ${request.params.id}`);
    return a;
  });

  app.patch('/artifacts/:id', {
    config: { permission: 'artifacts.write', summary: 'Update description and labels (name, version, digest are immutable)' },
    // unknown and immutable fields are refused by patchArtifact naming the field (400)
    schema: { params: IdParams, body: Type.Object({}, { additionalProperties: true, maxProperties: 16 }), response: { 200: Artifact, ...ErrorResponses } },
  }, async (request) => {
    const a = await patchArtifact(db, principalOf(request).tenantId, request.params.id, request.body as Record<string, unknown>, ctx.now());
    await audit(db, request, { action: 'artifact.update', target: `artifact:${a.id}`, detail: { fields: Object.keys(request.body as object) } });
    return a;
  });
};
