/** The artifacts table (and whether an SBOM is attached). Every function is tenant-scoped. */
import { normalizeUuid, ARTIFACT_KINDS, type ArtifactKind } from '@svc/release-core';
import { sql, type Insertable, type Selectable } from 'kysely';
import { likeContains } from '../../http/pagination.js';
import type { ArtifactsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';

export type ArtifactRow = Selectable<ArtifactsTable> & { has_sbom: unknown };

/** The columns a publish writes (the rest are defaults, or set by a PATCH). */
export type NewArtifact = Required<
  Pick<Insertable<ArtifactsTable>, 'name' | 'version' | 'kind' | 'media_type' | 'filename' | 'digest' | 'length' | 'target' | 'source'>
>;

export async function artifactVersionExists(db: Db, tenantId: string, name: string, version: string): Promise<boolean> {
  const r = await db
    .selectFrom('artifacts')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .where('version', '=', version)
    .executeTakeFirst();
  return r !== undefined;
}

/** Inserts the record; a duplicate name and version raises the database's unique violation. */
export async function insertArtifact(db: Db, tenantId: string, a: NewArtifact, now: Date): Promise<string> {
  const row = await db
    .insertInto('artifacts')
    .values({ tenant_id: tenantId, ...a, description: null, created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function getArtifact(db: Db, tenantId: string, id: string): Promise<ArtifactRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('artifacts as a')
    .leftJoin('artifact_sboms as s', 's.artifact_id', 'a.id')
    .selectAll('a')
    .select((eb) => eb('s.artifact_id', 'is not', null).as('has_sbom'))
    .where('a.tenant_id', '=', tenantId)
    .where('a.id', '=', uuid)
    .executeTakeFirst();
}

export interface ArtifactFilter {
  kind?: string | undefined;
  /** an open finding at or above this severity rank (vulnerabilities/severity.ts SEVERITY_RANK) */
  minSeverityRank?: number | undefined;
  q?: string | undefined;
}

/** One page of the filtered artifacts, newest first, and how many match the filter. */
export async function listArtifacts(
  db: Db,
  tenantId: string,
  filter: ArtifactFilter,
  limit: number,
  offset: number,
): Promise<{ rows: ArtifactRow[]; total: number }> {
  let q = db.selectFrom('artifacts as a').leftJoin('artifact_sboms as s', 's.artifact_id', 'a.id').where('a.tenant_id', '=', tenantId);
  if (filter.kind !== undefined) q = q.where('a.kind', '=', filter.kind);
  // a finding at or above that severity that VEX has not closed (not not_affected, not fixed)
  if (filter.minSeverityRank !== undefined) {
    const rank = filter.minSeverityRank;
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('vuln_findings as f')
          .select(sql<number>`1`.as('one'))
          .whereRef('f.artifact_id', '=', 'a.id')
          .where('f.severity_rank', '>=', rank)
          .where((e) => e.or([e('f.vex_status', 'is', null), e('f.vex_status', 'in', ['affected', 'under_investigation'])])),
      ),
    );
  }
  if (filter.q !== undefined && filter.q !== '') {
    const pattern = likeContains(filter.q);
    q = q.where((eb) => eb.or([eb('a.name', 'like', pattern), eb('a.version', 'like', pattern)]));
  }
  const rows = await q
    .selectAll('a')
    .select((eb) => eb('s.artifact_id', 'is not', null).as('has_sbom'))
    .orderBy('a.created_at', 'desc')
    .orderBy('a.id')
    .limit(limit)
    .offset(offset)
    .execute();
  const total = await q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(total.n) };
}

/** spec §8 counts: the tenant's artifacts by kind (every kind present, zero when none). */
export async function artifactKindCounts(db: Db, tenantId: string): Promise<Record<ArtifactKind, number>> {
  const byKind = await db
    .selectFrom('artifacts')
    .select(['kind', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('kind')
    .execute();
  const counts = Object.fromEntries(ARTIFACT_KINDS.map((k) => [k, 0])) as Record<ArtifactKind, number>;
  for (const r of byKind) if (r.kind in counts) counts[r.kind as ArtifactKind] = Number(r.n);
  return counts;
}

/** Writes the mutable fields; false when the tenant has no such artifact. */
export async function updateArtifact(
  db: Db,
  tenantId: string,
  id: string,
  set: { description?: string | null; labels?: Record<string, string> },
  now: Date,
): Promise<boolean> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return false;
  const values: { description?: string | null; labels?: string; updated_at: Date } = { updated_at: now };
  if (set.description !== undefined) values.description = set.description;
  if (set.labels !== undefined) values.labels = JSON.stringify(set.labels);
  const r = await db.updateTable('artifacts').set(values).where('tenant_id', '=', tenantId).where('id', '=', uuid).executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
