/**
 * Analysis runs: per tenant, queued by a feed import, leased by one server process at a time
 * (`lease_owner`, `lease_until`, renewed each batch; a lapsed lease is taken over), walking
 * the tenant's SBOM-carrying artifacts in id order from `cursor`.
 */
import { normalizeUuid } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { VulnAnalysisRunsTable } from '../../store/vuln-tables.js';
import type { Db } from '../../store/tx.js';

export type RunRow = Selectable<VulnAnalysisRunsTable>;

/**
 * One queued run per tenant (a tenant whose queued run has not started yet needs no second:
 * it will read the newer feed). Answers how many were queued.
 */
export async function enqueueAnalysisForAllTenants(db: Db, reason: string, importId: string | null, now: Date): Promise<number> {
  const r = await sql<{ n: string }>`
    WITH ins AS (
      INSERT INTO vuln_analysis_runs (tenant_id, reason, import_id, state, created_at)
      SELECT t.id, ${reason}, ${importId}::uuid, 'queued', ${now}::timestamptz FROM tenants t
      WHERE NOT EXISTS (SELECT 1 FROM vuln_analysis_runs r WHERE r.tenant_id = t.id AND r.state = 'queued')
      RETURNING 1
    ) SELECT count(*) AS n FROM ins`.execute(db);
  return Number(r.rows[0]!.n);
}

/**
 * Leases the oldest run that is queued or whose lease lapsed, skipping tenants with another
 * live run, for `owner` until `until`. Undefined when nothing is due.
 */
export async function leaseRun(db: Db, owner: string, now: Date, until: Date): Promise<RunRow | undefined> {
  const r = await sql<RunRow>`
    UPDATE vuln_analysis_runs SET state = 'running', lease_owner = ${owner}, lease_until = ${until}::timestamptz, started_at = coalesce(started_at, ${now}::timestamptz),
      artifacts_total = CASE WHEN started_at IS NULL THEN (SELECT count(*) FROM artifact_sboms s WHERE s.tenant_id = vuln_analysis_runs.tenant_id) ELSE artifacts_total END
    WHERE id = (
      SELECT r.id FROM vuln_analysis_runs r
      WHERE r.state <> 'completed' AND (r.state = 'queued' OR r.lease_until < ${now}::timestamptz)
        AND NOT EXISTS (SELECT 1 FROM vuln_analysis_runs o WHERE o.tenant_id = r.tenant_id AND o.id <> r.id AND o.state = 'running' AND o.lease_until >= ${now}::timestamptz)
      ORDER BY r.created_at, r.id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *`.execute(db);
  return r.rows[0];
}

export async function lockRun(db: Db, id: string): Promise<RunRow | undefined> {
  return db.selectFrom('vuln_analysis_runs').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/**
 * The next SBOM-carrying artifacts of the tenant after `cursor`, in id order: at most
 * `maxArtifacts`, and no more components in all than `maxComponents` (the first artifact is
 * always taken, whatever its size). `more`: artifacts remain after these.
 */
export async function nextArtifacts(
  db: Db,
  tenantId: string,
  cursor: string | null,
  maxArtifacts: number,
  maxComponents: number,
): Promise<{ ids: string[]; more: boolean }> {
  const r = await sql<{ artifact_id: string; n: string }>`
    SELECT s.artifact_id, (SELECT count(*) FROM sbom_components c WHERE c.artifact_id = s.artifact_id) AS n
    FROM artifact_sboms s
    WHERE s.tenant_id = ${tenantId} ${cursor === null ? sql`` : sql`AND s.artifact_id > ${cursor}::uuid`}
    ORDER BY s.artifact_id
    LIMIT ${maxArtifacts + 1}`.execute(db);
  const ids: string[] = [];
  let components = 0;
  for (const row of r.rows) {
    const n = Number(row.n);
    if (ids.length === maxArtifacts || (ids.length > 0 && components + n > maxComponents)) break;
    ids.push(row.artifact_id);
    components += n;
  }
  return { ids, more: ids.length < r.rows.length };
}

export async function advanceRun(
  db: Db,
  id: string,
  set: {
    cursor: string | null;
    artifacts_done: number;
    findings_added: number;
    findings_removed: number;
    findings_withdrawn: number;
    signals: number;
    lease_until: Date | null;
    state?: 'completed';
    completed_at?: Date;
  },
): Promise<void> {
  await db.updateTable('vuln_analysis_runs').set(set).where('id', '=', id).execute();
}

export async function listRuns(
  db: Db,
  tenantId: string,
  limit: number,
  offset: number,
): Promise<{ rows: RunRow[]; counts: Record<'queued' | 'running' | 'completed', number> }> {
  const rows = await db
    .selectFrom('vuln_analysis_runs')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .limit(limit)
    .offset(offset)
    .execute();
  const byState = await db
    .selectFrom('vuln_analysis_runs')
    .select(['state', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('state')
    .execute();
  const counts = { queued: 0, running: 0, completed: 0 };
  for (const r of byState) counts[r.state] = Number(r.n);
  return { rows, counts };
}

export async function getRun(db: Db, tenantId: string, id: string): Promise<RunRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db.selectFrom('vuln_analysis_runs').selectAll().where('tenant_id', '=', tenantId).where('id', '=', uuid).executeTakeFirst();
}

/** Tenants with known-exploited findings not yet signalled (the job's sweep). */
export async function tenantsWithUnsignalled(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('vuln_findings')
    .select('tenant_id')
    .distinct()
    .where('known_exploited', '=', true)
    .where('exploited_signal_at', 'is', null)
    .execute();
  return rows.map((r) => r.tenant_id);
}
