import { sql, type Selectable } from 'kysely';
import type { DeploymentsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';
import type { TransactionState } from '../rollouts/states.js';
import type { ManifestMember } from './result-manifest.js';

/** A signed deployment seen as its release transaction. */
export type TransactionRow = Pick<Selectable<DeploymentsTable>, (typeof COLUMNS)[number]>;

const COLUMNS = [
  'id',
  'release_id',
  'member_count',
  'group_id',
  'snapshot_digest',
  'device_count',
  'aborted_at',
  'n_committed',
  'n_rolled_back',
  'n_failed',
  'n_installed',
  'n_skipped',
  'created_at',
] as const;

function signedDeployments(db: Db, tenantId: string) {
  return db.selectFrom('deployments').where('tenant_id', '=', tenantId).where('kind', '=', 'signed');
}

export async function transactionPage(db: Db, tenantId: string, limit: number, offset: number): Promise<{ rows: TransactionRow[]; total: number }> {
  const q = signedDeployments(db, tenantId);
  const [rows, total] = await Promise.all([
    q.select(COLUMNS).orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/**
 * spec §8 counts: the tenant's transactions by displayed state (the whole set), derived in SQL
 * with the rules of states.ts `transactionState`.
 */
export async function transactionCountsByState(db: Db, tenantId: string): Promise<Record<TransactionState, number>> {
  const byState = await sql<{ state: TransactionState; n: string }>`
    SELECT CASE
      WHEN n_failed > 0 THEN 'failed'
      WHEN device_count > n_committed + n_rolled_back + n_failed + n_installed + n_skipped AND aborted_at IS NULL THEN 'running'
      WHEN n_rolled_back > 0 THEN 'rolled back'
      WHEN n_committed + n_installed = 0 THEN 'failed'
      WHEN device_count > n_committed + n_rolled_back + n_failed + n_installed + n_skipped THEN 'failed'
      ELSE 'committed' END AS state, count(*) AS n
    FROM deployments WHERE tenant_id = ${tenantId} AND kind = 'signed' GROUP BY 1`.execute(db);
  const counts: Record<TransactionState, number> = { running: 0, committed: 0, 'rolled back': 0, failed: 0 };
  for (const r of byState.rows) counts[r.state] = Number(r.n);
  return counts;
}

/** `id` must be a UUID. */
export async function transactionById(db: Db, tenantId: string, id: string): Promise<TransactionRow | undefined> {
  return signedDeployments(db, tenantId).select(COLUMNS).where('id', '=', id).executeTakeFirst();
}

/** The members of each transaction with their artifact digests, in activation order. */
export async function membersOf(db: Db, ids: string[]): Promise<Map<string, ManifestMember[]>> {
  const out = new Map<string, ManifestMember[]>();
  if (ids.length === 0) return out;
  const rows = await db
    .selectFrom('rollouts as r')
    .innerJoin('artifacts as a', 'a.id', 'r.artifact_id')
    .select(['r.deployment_id', 'r.id', 'r.component', 'r.group_index', 'r.position', 'r.artifact_id', 'a.digest'])
    .where('r.deployment_id', 'in', ids)
    .orderBy('r.position')
    .execute();
  for (const r of rows) {
    const list = out.get(r.deployment_id) ?? [];
    list.push({ rollout_id: r.id, artifact_id: r.artifact_id, component: r.component, digest: r.digest, group: r.group_index, position: r.position });
    out.set(r.deployment_id, list);
  }
  return out;
}

/** Devices of a transaction after `after` in byte order of names, with their accepted receipt (keyset page). */
export async function resultPage(db: Db, tenantId: string, id: string, after: string, limit: number) {
  return db
    .selectFrom('deployment_devices as dd')
    .leftJoin('release_receipts as rr', 'rr.id', 'dd.receipt_id')
    .select(['dd.device_name', 'dd.state', 'rr.envelope_digest', 'rr.payload'])
    .where('dd.tenant_id', '=', tenantId)
    .where('dd.deployment_id', '=', id)
    .where(sql<boolean>`dd.device_name COLLATE "C" > ${after}`)
    .orderBy(sql`dd.device_name COLLATE "C"`)
    .limit(limit)
    .execute();
}
