/**
 * The JSON shapes of vulnerabilities and their exposure, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp, Timestamp } from '../../http/schemas.js';

/** An artifact with a finding of the vulnerability, and how many devices run it. */
export const ExposedArtifact = Type.Object({
  id: Type.String(),
  name: Type.String(),
  version: Type.String(),
  digest: Type.String(),
  findings: Type.Integer(),
  open_findings: Type.Integer(),
  components: Type.Array(Type.String()),
  fixed_versions: Type.Array(Type.String()),
  vex_statuses: Type.Array(Type.String()),
  devices: Type.Integer(),
});
export type ExposedArtifactView = Static<typeof ExposedArtifact>;

/** A group and how many of its members are exposed. */
export const CountedGroup = Type.Object({ id: Type.String(), name: Type.String(), devices: Type.Integer() });

export const ExposedDevice = Type.Object({
  name: Type.String(),
  components: Type.Array(Type.String()),
  source: Type.String({ description: 'receipt (device-signed, software-key) or legacy (device-reported status)' }),
});

/** One vulnerability's exposure as the exposure API and a case's linked evidence show it. */
export const ExposureParts = {
  vulnerability: Type.String(),
  artifacts: Type.Array(ExposedArtifact),
  releases: Type.Array(Type.Object({ id: Type.String(), product: Type.String(), version: Type.String(), artifacts: Type.Array(Type.String()) })),
  fixed_by: Type.Array(Type.Object({ product: Type.String(), release_id: Type.String(), version: Type.String(), created_at: Timestamp }), {
    description: 'per product, the newest published release none of whose artifacts has an open finding of this vulnerability (all with an SBOM)',
  }),
  groups: Type.Array(CountedGroup),
};

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const Kev = Type.Union([
  Type.Object({
    date_added: Type.String(),
    due_date: Nullable(Type.String()),
    vendor_project: Type.String(),
    product: Type.String(),
    name: Type.String(),
    known_ransomware: Nullable(Type.String()),
  }),
  Type.Null(),
]);

/** A vulnerability (its records merged by alias), its severity and KEV entry. */
export const Vulnerability = Type.Object({
  id: Type.String(),
  aliases: Type.Array(Type.String()),
  known_exploited: Type.Boolean(),
  kev: Kev,
  advisories: Type.Array(
    Type.Object({
      id: Type.String(),
      summary: Nullable(Type.String()),
      severity: Type.String(),
      severity_source: Type.String(),
      cvss_score: Type.Union([Type.Number(), Type.Null()]),
      cvss_vector: Nullable(Type.String()),
      modified: Timestamp,
      published: NullableTimestamp,
      withdrawn: NullableTimestamp,
      affected: Type.Array(Type.Unknown()),
    }),
  ),
});

/** One vulnerability's exposure in the fleet, its exposed devices paged. */
export const VulnerabilityExposure = Type.Object({
  ...ExposureParts,
  devices: Type.Array(ExposedDevice),
  total: Type.Integer({ description: 'exposed devices (running an artifact with an open finding)' }),
  limit: Type.Integer(),
  offset: Type.Integer(),
  counts: Type.Object({
    artifacts: Type.Integer(),
    open_artifacts: Type.Integer(),
    releases: Type.Integer(),
    groups: Type.Integer(),
    devices: Type.Integer(),
  }),
});
