/**
 * Release transactions (spec 2 "Release transaction", 3, 4): a signed deployment seen as the
 * transaction its members are bound by. State is derived from accepted receipts only (counters
 * kept in the receipt transaction); the result document is deterministic (result-manifest.ts).
 */
import { sql } from 'kysely';
import { type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import { resultManifestChunks, type DeviceResult, type ManifestMember, type MemberOutcome } from './result-manifest.js';
import { transactionState, type DeviceState, type StateCounts, type TransactionState } from './states.js';
import { ServerError } from '../errors/server-error.js';

export interface TransactionView {
  id: string;
  release_id: string;
  member_count: number;
  members: { rollout_id: string; component: string; group: number; position: number; artifact_id: string; digest: string }[];
  state: TransactionState;
  group_id: string;
  snapshot_digest: string;
  aborted: boolean;
  devices: { total: number; pending: number; committed: number; rolled_back: number; failed: number };
  created_at: string;
}

type DepRow = {
  id: string; release_id: string | null; member_count: number; group_id: string; snapshot_digest: string; device_count: number; aborted_at: Date | null;
  n_committed: number; n_rolled_back: number; n_failed: number; n_installed: number; created_at: Date;
};

function counts(d: DepRow): StateCounts {
  const terminal = d.n_committed + d.n_rolled_back + d.n_failed + d.n_installed;
  return { pending: d.device_count - terminal, committed: d.n_committed, 'rolled back': d.n_rolled_back, failed: d.n_failed, installed: d.n_installed };
}

async function membersOf(db: Db, ids: string[]): Promise<Map<string, ManifestMember[]>> {
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

function view(d: DepRow, members: ManifestMember[]): TransactionView {
  const c = counts(d);
  return {
    id: d.id,
    release_id: d.release_id!,
    member_count: d.member_count,
    members: members.map((m) => ({ rollout_id: m.rollout_id, component: m.component, group: m.group, position: m.position, artifact_id: m.artifact_id, digest: m.digest })),
    state: transactionState(c, d.aborted_at !== null),
    group_id: d.group_id,
    snapshot_digest: d.snapshot_digest,
    aborted: d.aborted_at !== null,
    devices: { total: d.device_count, pending: c.pending, committed: c.committed, rolled_back: c['rolled back'], failed: c.failed },
    created_at: d.created_at.toISOString(),
  };
}

const DEP_COLUMNS = ['id', 'release_id', 'member_count', 'group_id', 'snapshot_digest', 'device_count', 'aborted_at', 'n_committed', 'n_rolled_back', 'n_failed', 'n_installed', 'created_at'] as const;

export async function listTransactions(db: Db, tenantId: string, limit: number, offset: number): Promise<{ release_transactions: TransactionView[]; total: number; limit: number; offset: number; counts: Record<TransactionState, number> }> {
  const q = db.selectFrom('deployments').where('tenant_id', '=', tenantId).where('kind', '=', 'signed');
  const rows = await q.select(DEP_COLUMNS).orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset).execute();
  const total = Number((await q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  // counts by displayed state over the tenant's whole set: derived in SQL with the same rules as states.ts
  const byState = await sql<{ state: TransactionState; n: string }>`
    SELECT CASE
      WHEN n_failed > 0 THEN 'failed'
      WHEN device_count > n_committed + n_rolled_back + n_failed + n_installed AND aborted_at IS NULL THEN 'running'
      WHEN n_rolled_back > 0 THEN 'rolled back'
      WHEN n_committed + n_installed = 0 THEN 'failed'
      WHEN device_count > n_committed + n_rolled_back + n_failed + n_installed THEN 'failed'
      ELSE 'committed' END AS state, count(*) AS n
    FROM deployments WHERE tenant_id = ${tenantId} AND kind = 'signed' GROUP BY 1`.execute(db);
  const c: Record<TransactionState, number> = { running: 0, committed: 0, 'rolled back': 0, failed: 0 };
  for (const r of byState.rows) c[r.state] = Number(r.n);
  const members = await membersOf(db, rows.map((r) => r.id));
  return { release_transactions: rows.map((r) => view(r, members.get(r.id) ?? [])), total, limit, offset, counts: c };
}

export async function getTransaction(db: Db, tenantId: string, id: string): Promise<TransactionView | undefined> {
  if (!isUuid(id)) return undefined;
  const d = await db.selectFrom('deployments').select(DEP_COLUMNS).where('tenant_id', '=', tenantId).where('kind', '=', 'signed').where('id', '=', id).executeTakeFirst();
  if (!d) return undefined;
  return view(d, (await membersOf(db, [d.id])).get(d.id) ?? []);
}

/** Per-device states of a transaction, paged (detail view). */
export async function transactionDevices(db: Db, tenantId: string, id: string, limit: number, offset: number): Promise<{ device: string; state: DeviceState; wave: number }[]> {
  const rows = await db
    .selectFrom('deployment_devices')
    .select(['device_name', 'state', 'wave_idx'])
    .where('tenant_id', '=', tenantId)
    .where('deployment_id', '=', id)
    .orderBy(sql`device_name COLLATE "C"`)
    .limit(limit)
    .offset(offset)
    .execute();
  return rows.map((r) => ({ device: r.device_name, state: r.state as DeviceState, wave: r.wave_idx }));
}

const PAGE = 1000;

/** The deterministic result document, streamed in device-name order (keyset pages of 1000). */
export async function transactionResult(db: Db, tenantId: string, id: string): Promise<AsyncGenerator<Uint8Array>> {
  const t = await getTransaction(db, tenantId, id);
  if (!t) throw new ServerError('NOT_FOUND', `release transaction ${id} not found`);
  const members: ManifestMember[] = t.members.map((m) => ({ rollout_id: m.rollout_id, artifact_id: m.artifact_id, component: m.component, digest: m.digest, group: m.group, position: m.position }));
  async function* devices(): AsyncGenerator<DeviceResult> {
    let after = '';
    for (;;) {
      const rows = await db
        .selectFrom('deployment_devices as dd')
        .leftJoin('release_receipts as rr', 'rr.id', 'dd.receipt_id')
        .select(['dd.device_name', 'dd.state', 'rr.envelope_digest', 'rr.payload'])
        .where('dd.tenant_id', '=', tenantId)
        .where('dd.deployment_id', '=', id)
        .where(sql<boolean>`dd.device_name COLLATE "C" > ${after}`)
        .orderBy(sql`dd.device_name COLLATE "C"`)
        .limit(PAGE)
        .execute();
      for (const r of rows) {
        yield { device: r.device_name, state: r.state as DeviceState, receipt_envelope_digest: r.envelope_digest ?? null, outcomes: r.payload ? outcomesOf(r.payload as Record<string, unknown>, members) : null };
      }
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1]!.device_name;
    }
  }
  return resultManifestChunks({ transaction_id: t.id, release_id: t.release_id, members }, devices());
}

/** contracts 3: per-member outcomes of a receipt (multi-component `members[]`, or the single component). */
export function outcomesOf(payload: Record<string, unknown>, members: ManifestMember[]): Record<string, MemberOutcome> {
  const out: Record<string, MemberOutcome> = {};
  const list = payload['members'];
  if (Array.isArray(list)) {
    for (const m of list as Record<string, unknown>[]) {
      out[String(m['component'])] = { verdict: String(m['verdict']), resulting_digest: (m['resulting_digest'] as string | null) ?? null, previous_digest: (m['previous_digest'] as string | null) ?? null };
    }
    return out;
  }
  const only = members[0];
  if (only) {
    const activation = String(payload['activation']);
    const verdict = activation === 'activated' ? 'committed' : activation === 'rolled-back' ? 'rolled-back' : 'failed';
    out[only.component] = { verdict, resulting_digest: (payload['resulting_digest'] as string | null) ?? null, previous_digest: (payload['previous_digest'] as string | null) ?? null };
  }
  return out;
}
