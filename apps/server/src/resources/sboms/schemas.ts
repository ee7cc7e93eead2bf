/**
 * The JSON shapes of SBOM components, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';

export const Component = Type.Object({
  purl: Type.String({ description: 'canonical package URL (pkg:generic/<name>@<version> for a component without one)' }),
  package_key: Type.String({ description: 'what vulnerability records are matched on: Ecosystem|name, or purl:<purl without version>' }),
  ecosystem: Type.Union([Type.String(), Type.Null()]),
  release: Type.Union([Type.String(), Type.Null()], { description: 'distribution release (Debian 12, Alpine v3.19)' }),
  name: Type.String(),
  version: Type.Union([Type.String(), Type.Null()]),
  licenses: Type.Array(Type.String()),
  hashes: Type.Record(Type.String(), Type.String()),
});
export type ComponentView = Static<typeof Component>;

/** An attached SBOM: its format, digest, and the components indexed and findings matched. */
export const SbomAttached = Type.Object({
  artifact_id: Type.String(),
  format: Type.String(),
  spec_version: Type.String(),
  digest: Type.String(),
  components: Type.Integer(),
  findings: Type.Integer(),
});
