import { normalizeUuid } from '@svc/release-core';
import type { Db } from '../../store/tx.js';
import type { WaveRow } from './progression.js';
import { auditEventJson, auditOfTargets } from '../audit/queries.js';
import { SERVER_LIMITS } from '../../limits.js';
import { deploymentDevicePage, deploymentFailureReasons, deploymentMembers, deploymentThreshold, rolloutById, wavesOf, type RolloutRow } from './queries.js';
import type { RolloutActivity, RolloutDetailView, RolloutView } from './schemas.js';
import { rolloutStatus } from './states.js';

/** spec §3 rule 2: the deployment id is the transaction id of a signed deployment; legacy has none. */
export function transactionIdOf(r: { kind: 'signed' | 'legacy'; deployment_id: string }): string | null {
  return r.kind === 'signed' ? r.deployment_id : null;
}

export function rolloutJson(r: RolloutRow, waves: WaveRow[]): RolloutView {
  const terminal = r.n_committed + r.n_rolled_back + r.n_failed + r.n_installed + r.n_skipped;
  return {
    id: r.id,
    kind: r.kind,
    release_id: r.release_id,
    transaction_id: transactionIdOf(r),
    status: rolloutStatus(waves, r.aborted_at !== null),
    artifact_id: r.artifact_id,
    component: r.component,
    group: r.group_index,
    position: r.position,
    group_id: r.group_id,
    product: r.product,
    version: r.version,
    group_name: r.group_name,
    device_count: r.device_count,
    evidence: r.kind === 'signed' ? 'signed-receipt' : 'device-reported',
    progress: {
      pending: r.device_count - terminal,
      committed: r.n_committed,
      rolled_back: r.n_rolled_back,
      failed: r.n_failed,
      installed: r.n_installed,
      skipped: r.n_skipped,
    },
    created_at: r.created_at.toISOString(),
  };
}

/** A page of rollouts with their statuses (waves read in one query for the page). */
export async function rolloutsJson(db: Db, rows: RolloutRow[]): Promise<RolloutView[]> {
  const waves = await wavesOf(db, [...new Set(rows.map((r) => r.deployment_id))]);
  return rows.map((r) => rolloutJson(r, waves.get(r.deployment_id) ?? []));
}

/** The rollout detail: members, waves, threshold and one page of its devices. */
export async function rolloutDetail(db: Db, tenantId: string, id: string, devicePage = { limit: 50, offset: 0 }): Promise<RolloutDetailView | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  const r = await rolloutById(db, tenantId, uuid);
  if (!r) return undefined;
  const [waves, members, threshold, devices] = await Promise.all([
    wavesOf(db, [r.deployment_id]).then((m) => m.get(r.deployment_id) ?? []),
    deploymentMembers(db, r.deployment_id),
    deploymentThreshold(db, r.deployment_id),
    deploymentDevicePage(db, tenantId, r.deployment_id, devicePage.limit, devicePage.offset),
  ]);
  return {
    ...rolloutJson(r, waves),
    members: members.map((m) => ({ rollout_id: m.id, component: m.component, group: m.group_index, position: m.position, artifact_id: m.artifact_id })),
    failure_threshold: threshold,
    waves: waves.map((w) => ({
      index: w.index,
      name: w.name,
      size: w.size,
      requires_approval: w.requires_approval,
      state: w.state,
      done: w.done,
      failed: w.failed,
    })),
    devices: devices.map((d) => ({ device: d.device_name, wave: d.wave_idx, state: d.state, updated_at: d.updated_at ? d.updated_at.toISOString() : null })),
    devices_total: r.device_count,
  };
}

/** What a rollout's timeline shows: its start, wave moves, operator controls. Per-device rows are in the failures and the device list. */
const TIMELINE_ACTIONS = ['rollout.start', 'rollout.wave', 'rollout.approve', 'rollout.resume', 'rollout.abort'] as const;

/** A rollout's timeline from the audit rows of its members, and its failed devices grouped by reason. */
export async function rolloutActivity(db: Db, tenantId: string, id: string): Promise<RolloutActivity | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  const r = await rolloutById(db, tenantId, uuid);
  if (!r) return undefined;
  const members = await deploymentMembers(db, r.deployment_id);
  const [events, failures] = await Promise.all([
    auditOfTargets(
      db,
      tenantId,
      members.map((m) => `rollout:${m.id}`),
      TIMELINE_ACTIONS,
      SERVER_LIMITS.rolloutTimelineEvents,
    ),
    deploymentFailureReasons(db, tenantId, r.deployment_id, r.kind, {
      reasons: SERVER_LIMITS.rolloutFailureReasons,
      devicesPerReason: SERVER_LIMITS.devicesPerFailureReason,
    }),
  ]);
  return { timeline: events.map(auditEventJson), timeline_truncated: events.length === SERVER_LIMITS.rolloutTimelineEvents, failures };
}
