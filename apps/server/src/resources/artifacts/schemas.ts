/**
 * The JSON shapes of artifacts, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { ARTIFACT_KINDS } from '@svc/release-core';
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';

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
export type ArtifactView = Static<typeof Artifact>;

export const KindCounts = Type.Object(
  Object.fromEntries(ARTIFACT_KINDS.map((k) => [k, Type.Integer()])) as Record<(typeof ARTIFACT_KINDS)[number], ReturnType<typeof Type.Integer>>,
  {
    description: "the tenant's artifacts by kind, whatever the filter",
  },
);
