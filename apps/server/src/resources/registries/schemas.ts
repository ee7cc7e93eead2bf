/**
 * The JSON shapes of OCI registries, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';

export const Registry = Type.Object(
  { id: Uuid, name: Type.String(), url: Type.String(), credentials_ref: Type.Union([Type.String(), Type.Null()]), created_at: Type.String() },
  { additionalProperties: false },
);
export type RegistryView = Static<typeof Registry>;

export const RegistryCounts = Type.Object({
  https: Type.Integer({ description: 'reached over https' }),
  http: Type.Integer({ description: 'reached over plain http (a local registry)' }),
  authenticated: Type.Integer({ description: 'with a credentials_ref' }),
  anonymous: Type.Integer({ description: 'without a credentials_ref' }),
});

/** A repository's tags as the registry lists them. */
export const RegistryTags = Type.Object({ repository: Type.String(), tags: Type.Array(Type.String()) });
