/**
 * Rollout reads and operator controls (spec 4: approve, resume, abort, detail). A member rollout
 * belongs to a deployment; waves, device progress and controls live on the deployment, so every
 * member of a release transaction moves together (an agent activates the members as one unit).
 * Controls lock the deployment row, so two server processes never interleave a transition.
 */
import { sql } from 'kysely';
import { type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import type { PipelineDeps } from '../resources/pipeline-deps.js';
import { approve, resume, type WaveRow } from './progression.js';
import { rolloutStatus, type RolloutStatus, type WaveState } from './states.js';
import type { FailureThreshold } from './waves.js';
import { ServerError } from '../errors/server-error.js';

export interface RolloutView {
  id: string;
  kind: 'signed' | 'legacy';
  release_id: string | null;
  transaction_id: string | null;
  status: RolloutStatus;
  artifact_id: string;
  component: string;
  group: number;
  position: number;
  group_id: string;
  device_count: number;
  /** legacy status is device-reported (spec 2.3.6); signed results come from verified receipts */
  evidence: 'signed-receipt' | 'device-reported';
  progress: { pending: number; committed: number; rolled_back: number; failed: number; installed: number };
  created_at: string;
}

export interface RolloutDetail extends RolloutView {
  members: { rollout_id: string; component: string; group: number; position: number; artifact_id: string }[];
  failure_threshold: FailureThreshold | null;
  waves: { index: number; name: string; size: number; requires_approval: boolean; state: WaveState; done: number; failed: number }[];
  devices: { device: string; wave: number; state: string; updated_at: string | null }[];
  devices_total: number;
}

type Joined = {
  id: string; kind: 'signed' | 'legacy'; release_id: string | null; deployment_id: string; artifact_id: string; component: string;
  group_index: number; position: number; created_at: Date; group_id: string; device_count: number; aborted_at: Date | null;
  n_committed: number; n_rolled_back: number; n_failed: number; n_installed: number;
};

function baseQuery(db: Db, tenantId: string) {
  return db
    .selectFrom('rollouts as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .where('r.tenant_id', '=', tenantId)
    .select([
      'r.id', 'r.kind', 'r.release_id', 'r.deployment_id', 'r.artifact_id', 'r.component', 'r.group_index', 'r.position', 'r.created_at',
      'd.group_id', 'd.device_count', 'd.aborted_at', 'd.n_committed', 'd.n_rolled_back', 'd.n_failed', 'd.n_installed',
    ]);
}

async function wavesOf(db: Db, deploymentIds: string[]): Promise<Map<string, WaveRow[]>> {
  const out = new Map<string, WaveRow[]>();
  if (deploymentIds.length === 0) return out;
  const rows = await db.selectFrom('deployment_waves').selectAll().where('deployment_id', 'in', deploymentIds).orderBy('deployment_id').orderBy('idx').execute();
  for (const w of rows) {
    const list = out.get(w.deployment_id) ?? [];
    list.push({ index: w.idx, size: w.size, requires_approval: w.requires_approval, state: w.state as WaveState, done: w.done, failed: w.failed, failures_acknowledged: w.failures_acknowledged });
    out.set(w.deployment_id, list);
  }
  return out;
}

function view(r: Joined, waves: WaveRow[]): RolloutView {
  const terminal = r.n_committed + r.n_rolled_back + r.n_failed + r.n_installed;
  return {
    id: r.id,
    kind: r.kind,
    release_id: r.release_id,
    // spec 3.2: the deployment id is the transaction id of a signed deployment; legacy has none
    transaction_id: r.kind === 'signed' ? r.deployment_id : null,
    status: rolloutStatus(waves, r.aborted_at !== null),
    artifact_id: r.artifact_id,
    component: r.component,
    group: r.group_index,
    position: r.position,
    group_id: r.group_id,
    device_count: r.device_count,
    evidence: r.kind === 'signed' ? 'signed-receipt' : 'device-reported',
    progress: { pending: r.device_count - terminal, committed: r.n_committed, rolled_back: r.n_rolled_back, failed: r.n_failed, installed: r.n_installed },
    created_at: r.created_at.toISOString(),
  };
}

export async function listRollouts(
  db: Db,
  tenantId: string,
  filter: { kind?: string; release_id?: string },
  limit: number,
  offset: number,
): Promise<{ rollouts: RolloutView[]; total: number; limit: number; offset: number; counts: Record<string, number> }> {
  let q = baseQuery(db, tenantId);
  if (filter.kind !== undefined) {
    if (filter.kind !== 'signed' && filter.kind !== 'legacy') throw new ServerError('ROLLOUT_INVALID', 'kind: must be signed or legacy');
    q = q.where('r.kind', '=', filter.kind);
  }
  if (filter.release_id !== undefined) {
    if (!isUuid(filter.release_id)) throw new ServerError('ROLLOUT_INVALID', 'release_id: must be a release id');
    q = q.where('r.release_id', '=', filter.release_id);
  }
  const rows = await q.orderBy('r.created_at', 'desc').orderBy('r.position').orderBy('r.id').limit(limit).offset(offset).execute();
  const total = await q.clearSelect().select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  const kinds = await db.selectFrom('rollouts').select(['kind', (eb) => eb.fn.countAll<string>().as('n')]).where('tenant_id', '=', tenantId).groupBy('kind').execute();
  const counts: Record<string, number> = { signed: 0, legacy: 0 };
  for (const k of kinds) counts[k.kind] = Number(k.n);
  const waves = await wavesOf(db, [...new Set(rows.map((r) => r.deployment_id))]);
  return { rollouts: rows.map((r) => view(r, waves.get(r.deployment_id) ?? [])), total: Number(total.n), limit, offset, counts };
}

export async function getRollout(db: Db, tenantId: string, id: string, devicePage = { limit: 50, offset: 0 }): Promise<RolloutDetail | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await baseQuery(db, tenantId).where('r.id', '=', id).executeTakeFirst();
  if (!r) return undefined;
  const waveRows = await db.selectFrom('deployment_waves').selectAll().where('deployment_id', '=', r.deployment_id).orderBy('idx').execute();
  const waves: WaveRow[] = waveRows.map((w) => ({ index: w.idx, size: w.size, requires_approval: w.requires_approval, state: w.state as WaveState, done: w.done, failed: w.failed, failures_acknowledged: w.failures_acknowledged }));
  const members = await db.selectFrom('rollouts').select(['id', 'component', 'group_index', 'position', 'artifact_id']).where('deployment_id', '=', r.deployment_id).orderBy('position').execute();
  const dep = await db.selectFrom('deployments').select('failure_threshold').where('id', '=', r.deployment_id).executeTakeFirstOrThrow();
  const devices = await db
    .selectFrom('deployment_devices')
    .select(['device_name', 'wave_idx', 'state', 'updated_at'])
    .where('deployment_id', '=', r.deployment_id)
    .orderBy(sql`device_name COLLATE "C"`)
    .limit(devicePage.limit)
    .offset(devicePage.offset)
    .execute();
  return {
    ...view(r, waves),
    members: members.map((m) => ({ rollout_id: m.id, component: m.component, group: m.group_index, position: m.position, artifact_id: m.artifact_id })),
    failure_threshold: (dep.failure_threshold as FailureThreshold | null) ?? null,
    waves: waveRows.map((w) => ({ index: w.idx, name: w.name, size: w.size, requires_approval: w.requires_approval, state: w.state as WaveState, done: w.done, failed: w.failed })),
    devices: devices.map((d) => ({ device: d.device_name, wave: d.wave_idx, state: d.state, updated_at: d.updated_at ? d.updated_at.toISOString() : null })),
    devices_total: r.device_count,
  };
}

export type RolloutAction = 'approve' | 'resume' | 'abort';

/** Operator controls; 409 ROLLOUT_STATE when the action does not apply now. */
export async function controlRollout(deps: PipelineDeps, tenantId: string, id: string, action: RolloutAction): Promise<void> {
  if (!isUuid(id)) throw new ServerError('NOT_FOUND', `rollout ${id} not found`);
  const now = deps.clock();
  await deps.db.transaction().execute(async (trx) => {
    const r = await trx.selectFrom('rollouts').select('deployment_id').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
    if (!r) throw new ServerError('NOT_FOUND', `rollout ${id} not found`);
    const d = await trx.selectFrom('deployments').select(['id', 'aborted_at', 'failure_threshold']).where('id', '=', r.deployment_id).forUpdate().executeTakeFirstOrThrow();
    const waves = (await wavesOf(trx, [d.id])).get(d.id) ?? [];
    if (d.aborted_at !== null) throw new ServerError('ROLLOUT_STATE', `rollout ${id}: is aborted`);
    if (action === 'abort') {
      if (rolloutStatus(waves, false) === 'completed') throw new ServerError('ROLLOUT_STATE', `rollout ${id}: is already completed`);
      await trx.updateTable('deployments').set({ aborted_at: now }).where('id', '=', d.id).execute();
      return;
    }
    const threshold = (d.failure_threshold as FailureThreshold | null) ?? undefined;
    const next = action === 'approve' ? approve(waves, threshold) : resume(waves, threshold);
    if (!next) throw new ServerError('ROLLOUT_STATE', `rollout ${id}: no wave is ${action === 'approve' ? 'waiting for approval' : 'paused'}`);
    await writeWaves(trx, d.id, waves, next, now);
  });
}

/** Writes only the wave rows that changed. */
export async function writeWaves(db: Db, deploymentId: string, before: WaveRow[], after: WaveRow[], now: Date): Promise<void> {
  for (const w of after) {
    const b = before.find((x) => x.index === w.index);
    if (b && b.state === w.state && b.done === w.done && b.failed === w.failed && b.failures_acknowledged === w.failures_acknowledged) continue;
    await db
      .updateTable('deployment_waves')
      .set({ state: w.state, done: w.done, failed: w.failed, failures_acknowledged: w.failures_acknowledged, updated_at: now })
      .where('deployment_id', '=', deploymentId)
      .where('idx', '=', w.index)
      .execute();
  }
}

