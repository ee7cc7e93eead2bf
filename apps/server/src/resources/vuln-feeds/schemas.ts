/**
 * The JSON shapes of vulnerability feed imports, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { NullableTimestamp, Timestamp } from '../../http/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

export const Import = Type.Object({
  id: Type.String(),
  kind: Type.Union([Type.Literal('osv'), Type.Literal('kev')]),
  source: Type.String(),
  digest: Type.String(),
  state: Type.Union([Type.Literal('running'), Type.Literal('completed')]),
  entries_total: Type.Integer(),
  entries_done: Type.Integer({ description: 'the resume cursor: record entries applied' }),
  added: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer({ description: 'records not newer (by modified) than the stored copy' }),
  skipped: Type.Integer({ description: 'malformed, oversized or non-OSV records, counted' }),
  skipped_detail: Type.Array(Type.Object({ entry: Type.String(), reason: Type.String() }), {
    description: `the first ${SERVER_LIMITS.feeds.keptSkipReasons} skipped records and why`,
  }),
  ranges_skipped: Type.Integer({
    description:
      'SEMVER and ECOSYSTEM ranges of the added and updated records that matching cannot evaluate (stored as written; matched by their versions list only)',
  }),
  ranges_skipped_detail: Type.Array(
    Type.Object({
      record: Type.String(),
      package: Type.String({ description: 'ecosystem|name as the record writes them' }),
      range_type: Type.String(),
      reason: Type.String({ description: 'no version ordering for the ecosystem, or the first bound its ordering cannot read' }),
    }),
    { description: `the first ${SERVER_LIMITS.feeds.keptSkipReasons} of those ranges and why` },
  ),
  catalog_version: Type.Union([Type.String(), Type.Null()]),
  actor: Type.String(),
  started_at: Timestamp,
  completed_at: NullableTimestamp,
});
export type ImportView = Static<typeof Import>;

/** Feed freshness: OSV sources and their last import, the newest record time, the KEV catalog version. */
export const FeedFreshness = Type.Object({
  osv: Type.Array(Type.Object({ source: Type.String(), last_import_at: NullableTimestamp, imports: Type.Integer() })),
  advisories: Type.Integer(),
  newest_modified: NullableTimestamp,
  kev: Type.Object({ catalog_version: Type.Union([Type.String(), Type.Null()]), entries: Type.Integer(), last_import_at: NullableTimestamp }),
});
