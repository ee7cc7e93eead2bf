/** vex_statements: append-only (a trigger refuses UPDATE and DELETE), tenant-scoped. */
import type { Selectable } from 'kysely';
import type { VexStatementsTable } from '../../store/vuln-tables.js';
import type { Db } from '../../store/tx.js';
import type { ParsedStatement } from './documents.js';

export type StatementRow = Selectable<VexStatementsTable>;

export async function insertStatements(
  db: Db,
  tenantId: string,
  artifactId: string,
  doc: { format: 'cyclonedx' | 'openvex'; digest: string; actor: string },
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
