/** vex_statements: append-only (a trigger refuses UPDATE and DELETE), tenant-scoped. */
import type { Digest } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { ArtifactsTable } from '../../store/release-tables.js';
import type { VexStatementsTable } from '../../store/vuln-tables.js';
import type { Db } from '../../store/tx.js';
import type { ParsedStatement } from './documents.js';

export type StatementRow = Selectable<VexStatementsTable>;

export async function insertStatements(
  db: Db,
  tenantId: string,
  artifactId: string,
  doc: { format: 'cyclonedx' | 'openvex'; digest: Digest; actor: string },
  statements: readonly ParsedStatement[],
  now: Date,
): Promise<StatementRow[]> {
  return db
    .insertInto('vex_statements')
    .values(
      statements.map((s) => ({
        tenant_id: tenantId,
        artifact_id: artifactId,
        format: doc.format,
        document_digest: doc.digest,
        actor: doc.actor,
        recorded_at: now,
        ...s,
      })),
    )
    .returningAll()
    .execute();
}

/** The artifact's statement history, newest statement first (filter: a vulnerability id). */
export async function listStatements(
  db: Db,
  tenantId: string,
  artifactId: string,
  vulnId: string | undefined,
  limit: number,
  offset: number,
): Promise<{ rows: StatementRow[]; total: number; counts: Record<string, number> }> {
  let q = db.selectFrom('vex_statements').where('tenant_id', '=', tenantId).where('artifact_id', '=', artifactId);
  if (vulnId !== undefined) q = q.where('vuln_id', '=', vulnId);
  const rows = await q.selectAll().orderBy('statement_at', 'desc').orderBy('recorded_at', 'desc').orderBy('id').limit(limit).offset(offset).execute();
  const byStatus = await q
    .select(['status', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('status')
    .execute();
  const counts: Record<string, number> = { not_affected: 0, affected: 0, fixed: 0, under_investigation: 0 };
  let total = 0;
  for (const r of byStatus) {
    counts[r.status] = Number(r.n);
    total += Number(r.n);
  }
  return { rows, total, counts };
}

/** `column = ANY($1)`: one array parameter however many artifacts. */
const anyArtifact = (column: string, ids: readonly string[]) => sql<boolean>`${sql.ref(column)} = ANY(${ids}::uuid[])`;

/** Whether the tenant has published a release of the product. */
export async function productExists(db: Db, tenantId: string, product: string): Promise<boolean> {
  const r = await db.selectFrom('releases').select('id').where('tenant_id', '=', tenantId).where('product', '=', product).limit(1).executeTakeFirst();
  return r !== undefined;
}

/** The product's releases, oldest first, each with the artifacts its signed payload names. */
export async function productReleases(
  db: Db,
  tenantId: string,
  product: string,
): Promise<{ id: string; version: string; created_at: Date; artifact_ids: string[] }[]> {
  const rows = await db
    .selectFrom('vuln_release_artifacts')
    .select(['release_id', 'version', 'created_at', 'artifact_id'])
    .where('tenant_id', '=', tenantId)
    .where('product', '=', product)
    .orderBy('created_at')
    .orderBy('release_id')
    .orderBy('artifact_id')
    .execute();
  const out = new Map<string, { id: string; version: string; created_at: Date; artifact_ids: string[] }>();
  for (const r of rows) {
    const rel = out.get(r.release_id) ?? { id: r.release_id, version: r.version, created_at: r.created_at, artifact_ids: [] };
    rel.artifact_ids.push(r.artifact_id);
    out.set(r.release_id, rel);
  }
  return [...out.values()];
}

/** The products whose releases name the artifact (alphabetical). */
export async function artifactProducts(db: Db, tenantId: string, artifactId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('vuln_release_artifacts')
    .select('product')
    .distinct()
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', '=', artifactId)
    .orderBy('product')
    .execute();
  return rows.map((r) => r.product);
}

export type ExportArtifactRow = Pick<Selectable<ArtifactsTable>, 'id' | 'name' | 'version' | 'kind' | 'digest' | 'filename'>;

export async function exportArtifacts(db: Db, tenantId: string, ids: readonly string[]): Promise<ExportArtifactRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('artifacts')
    .select(['id', 'name', 'version', 'kind', 'digest', 'filename'])
    .where('tenant_id', '=', tenantId)
    .where(anyArtifact('id', ids))
    .orderBy('name')
    .orderBy('version')
    .orderBy('id')
    .execute();
}

/** Every statement recorded on the artifacts, oldest record first; at most `limit` (the caller refuses more). */
export async function statementsOf(db: Db, tenantId: string, artifactIds: readonly string[], limit: number): Promise<StatementRow[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('vex_statements')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where(anyArtifact('artifact_id', artifactIds))
    .orderBy('recorded_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export interface ExportFindingRow {
  artifact_id: string;
  vuln_key: string;
  aliases: string[];
  component_purl: string;
  component_name: string;
  component_version: string | null;
  summary: string | null;
}

/** What the export reads of the artifacts' findings: the ids of each vulnerability, its summary, the components. */
export async function exportFindings(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<ExportFindingRow[]> {
  if (artifactIds.length === 0) return [];
  return db
    .selectFrom('vuln_findings')
    .select(['artifact_id', 'vuln_key', 'aliases', 'component_purl', 'component_name', 'component_version', 'summary'])
    .where('tenant_id', '=', tenantId)
    .where(anyArtifact('artifact_id', artifactIds))
    .orderBy('vuln_key')
    .orderBy('artifact_id')
    .orderBy('component_purl')
    .execute();
}
