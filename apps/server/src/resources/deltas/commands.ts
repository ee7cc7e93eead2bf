import { deltaEligible, type ReleasePayload } from '@svc/release-core';
import { SERVER_TUNING } from '../../limits.js';
import type { Command } from '../unit-of-work.js';
import type { Transaction } from 'kysely';
import type { Database } from '../../store/database.js';
import { deleteUnusedDeltas, ensureDelta, finishDelta, linkDeploymentDelta, sourceVersions, type DeltaRow } from './queries.js';
import type { BuildOutcome } from './builder.js';

/**
 * Member kinds the agent keeps as one file on the device, which it can rebuild from a delta:
 * file members' placed file, and a container's image archive (kept beside the runtime).
 */
export const DELTA_KINDS: ReadonlySet<string> = new Set(['model', 'config', 'service-binary', 'container']);

/**
 * At rollout start (docs/delta-updates.md "When deltas are made"): for each member of a
 * `DELTA_KINDS` kind, the versions the rollout's devices are known to run (receipts,
 * inventory), most common first and
 * bounded per member and per release, each paired with the new member as a delta row (queued
 * unless an earlier rollout already has it) linked to this rollout for its progress. Runs in
 * the start's unit of work, so a rollout and the deltas it asked for commit together; the
 * delta-build job makes them in the background.
 */
export const planDeltas: Command<{ deploymentId: string; groupId: string; payload: ReleasePayload }, { planned: number }> = async (uow, input) => {
  const { trx, tenant, now } = uow;
  let planned = 0;
  for (const c of input.payload.components) {
    if (!DELTA_KINDS.has(c.kind) || !deltaEligible(1, c.length)) continue;
    const room = Math.min(SERVER_TUNING.deltaSourcesPerMember, SERVER_TUNING.deltaSourcesPerRelease - planned);
    if (room <= 0) break;
    const sources = await sourceVersions(trx, { tenant, groupId: input.groupId, component: c.name, target: c.digest, limit: room });
    for (const s of sources) {
      if (!deltaEligible(s.length, c.length)) continue;
      const d = await ensureDelta(trx, { tenant, source: s.digest, target: c.digest, sourceLength: s.length, targetLength: c.length, now });
      await linkDeploymentDelta(trx, { deploymentId: input.deploymentId, deltaId: d.id, tenant, component: c.name, devices: s.devices });
      planned++;
    }
  }
  if (planned > 0) await uow.audit({ action: 'rollout.deltas', target: `transaction:${input.deploymentId}`, detail: { deltas: planned } });
  return { planned };
};

/** Records a build's outcome (its lease still held) and audits it; false when the lease was lost meanwhile. */
export const finishDeltaBuild: Command<{ row: DeltaRow; owner: string; outcome: BuildOutcome }, boolean> = async (uow, { row, owner, outcome }) => {
  const ok = await finishDelta(uow.trx, {
    id: row.id,
    owner,
    now: uow.now,
    state: outcome.state,
    buildMs: outcome.buildMs,
    peakRssBytes: outcome.peakRssBytes,
    ...(outcome.state === 'ready'
      ? { targetPath: outcome.targetPath, deltaDigest: outcome.deltaDigest, deltaLength: outcome.deltaLength }
      : { error: outcome.error }),
  });
  if (!ok) return false;
  await uow.audit({
    action: `delta.${outcome.state}`,
    target: `delta:${row.id}`,
    detail: {
      source_digest: row.source_digest,
      target_digest: row.target_digest,
      build_ms: outcome.buildMs,
      ...(outcome.state === 'ready' ? { target: outcome.targetPath, length: outcome.deltaLength } : { error: outcome.error }),
    },
  });
  return true;
};

/** Why the collector retires a delta: unused past the grace period, or a member's bytes are gone. */
export type RetireReason = 'unused' | 'source-gone' | 'target-gone';

/**
 * Retires one tenant's deltas (docs/delta-updates.md "Garbage collection"): deletes the rows
 * that are still unused by any running rollout and untouched since the collector looked
 * (deleteUnusedDeltas), takes the ready ones' targets out of the signed metadata with their
 * `tuf_target_files` rows in the same transaction, and audits each as `delta.retired`. Once
 * committed, no row names the delta's blob and the blob collector takes it. Answers the rows
 * retired.
 */
export const retireDeltas: Command<
  {
    rows: readonly { id: string; notAfter: Date; reason: RetireReason }[];
    retireTargets: (trx: Transaction<Database>, tenant: string, paths: readonly string[]) => Promise<unknown>;
  },
  number
> = async (uow, input) => {
  const gone = await deleteUnusedDeltas(uow.trx, { tenant: uow.tenant, rows: input.rows });
  if (gone.length === 0) return 0;
  const paths = gone.flatMap((g) => (g.target_path === null ? [] : [g.target_path]));
  if (paths.length > 0) await input.retireTargets(uow.trx, uow.tenant, paths);
  const reasons = new Map(input.rows.map((r) => [r.id, r.reason]));
  await uow.auditMany(
    gone.map((g) => ({
      action: 'delta.retired',
      target: `delta:${g.id}`,
      detail: {
        source_digest: g.source_digest,
        target_digest: g.target_digest,
        state: g.state,
        reason: reasons.get(g.id) ?? 'unused',
        ...(g.target_path === null ? {} : { target: g.target_path, delta_digest: g.delta_digest }),
      },
    })),
  );
  return gone.length;
};
