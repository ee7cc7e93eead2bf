/**
 * The JSON shapes of findings, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp, PageOf, Timestamp } from '../../http/schemas.js';
import { SEVERITIES } from '../vulnerabilities/severity.js';

export const Finding = Type.Object({
  id: Type.String(),
  vulnerability: Type.String({ description: 'the vulnerability key: its CVE when any record names one, else the record id' }),
  aliases: Type.Array(Type.String({ description: 'every id of the merged records (CVE, GHSA, DSA, PYSEC...)' })),
  advisories: Type.Array(Type.String()),
  summary: Type.Union([Type.String(), Type.Null()]),
  severity: Type.String(),
  severity_source: Type.String({ description: "database (the record's rating), ubuntu, cvss_v4, cvss_v3, cvss_v2 (computed), none" }),
  cvss_score: Type.Union([Type.Number(), Type.Null()]),
  artifact: Type.Object({ id: Type.String(), name: Type.String(), version: Type.String(), digest: Type.String() }),
  component: Type.Object({
    purl: Type.String(),
    name: Type.String(),
    version: Type.Union([Type.String(), Type.Null()]),
    ecosystem: Type.Union([Type.String(), Type.Null()]),
  }),
  fixed_versions: Type.Array(Type.String(), {
    description:
      "the versions that fix the installed one: the fixed bound of each range interval holding it, in the ecosystem's order, each above it; empty when no range names a fix (last_affected) or, for a match by the versions list alone, when no fix can be placed above it",
  }),
  record_fixed_versions: Type.Array(Type.String(), {
    description: "every fixed version the matching records name for this package, other release lines included, in the ecosystem's order",
  }),
  matched_by: Type.Array(Type.Unknown(), {
    description: 'how it matched: each advisory, with versions list or range (type, ordering, introduced, fixed, last_affected)',
  }),
  known_exploited: Type.Boolean(),
  kev_date_added: Type.Union([Type.String(), Type.Null()]),
  known_exploited_in_fleet_at: NullableTimestamp,
  vex: Type.Object({
    status: Type.Union([Type.String(), Type.Null()]),
    justification: Type.Union([Type.String(), Type.Null()]),
    statement_id: Type.Union([Type.String(), Type.Null()]),
  }),
  open: Type.Boolean({ description: 'not closed by VEX (no statement, affected or under_investigation)' }),
  first_seen_at: Timestamp,
  updated_at: Timestamp,
});
export type FindingView = Static<typeof Finding>;

const SeverityCounts = Type.Object(
  Object.fromEntries(SEVERITIES.map((s) => [s, Type.Integer()])) as Record<(typeof SEVERITIES)[number], ReturnType<typeof Type.Integer>>,
  { description: 'findings by severity over the filtered set' },
);

export const FindingPage = PageOf('findings', Finding, SeverityCounts);
