/**
 * Rollout start, operator controls and device-reported legacy status (spec §4 "Rollout start
 * against a published release", spec §3 rules 1-3, spec §2.3 rule 6).
 *
 * Signed start re-verifies EVERYTHING against current state: the authorizer key still
 * registered and not revoked (verifyRelease again on the stored envelope), envelope and payload
 * digests, the CURRENT group snapshot digest (computed from the members under the group row
 * lock), artifact records, device compatibility, health policy and waves; then creates the
 * deployment (its id IS the transaction id), one member rollout per component (group and
 * position from release-core transactionMembers), the waves and the per-device rows in the one
 * unit of work, so no device sees any work before every signed component is resolved.
 *
 * Legacy start: an artifact to a group, labelled `legacy` everywhere (spec §2.2 rule 3).
 *
 * Both starts reach the group's members in service only: a decommissioned device is refused on
 * the device channel and would hold its wave forever. A device decommissioned later, while it
 * is still pending, is settled as `skipped` (`skipDecommissionedDevice`).
 */
import { randomUUID } from 'node:crypto';
import {
  isReleaseError,
  normalizeUuid,
  parseFailureThreshold,
  parseWaves,
  transactionMembers,
  verifyRelease,
  LIMITS,
  type FailureThreshold,
  type ReleasePayload,
  type Wave,
} from '@svc/release-core';
import { invalidInput, notFound, ServerError } from '../../errors/server-error.js';
import { trustedAuthorizerKeys } from '../authorizer-keys/queries.js';
import { refreshGroupSnapshot } from '../groups/snapshot.js';
import type { Db } from '../../store/tx.js';
import { getReleaseWithEnvelope, targetGroup } from '../releases/queries.js';
import { checkComponentArtifacts, checkTargetPolicyDigest, parseStoredEnvelope } from '../releases/rules.js';
import { systemActor, type Command, type UnitOfWork } from '../unit-of-work.js';
import { approve, initialWaves, recordResult, resume, type WaveRow } from './progression.js';
import {
  addDeviceResults,
  analyzeDeploymentDevices,
  deploymentRollouts,
  inServiceMemberCount,
  incompatibleDevices,
  insertDeployment,
  insertLegacyReport,
  insertRollout,
  insertWavesAndDevices,
  legacyArtifact,
  legacyRollout,
  lockDeployment,
  lockDeploymentDevices,
  lockDeploymentWaves,
  lockRolloutDeployment,
  setAborted,
  setDeviceResult,
  skipPendingDevice,
  wavesOf,
  writeWaves,
} from './queries.js';
import { deviceStateFromLegacy, isFailure, rolloutStatus, type DeviceState, type RolloutStatus } from './states.js';
import { transactionIdOf } from './views.js';
import { planDeltas } from '../deltas/commands.js';
import { applyOverrides, planWaves, waveBounds, type PlannedWave } from './waves.js';
import { SERVER_LIMITS, SERVER_TUNING } from '../../limits.js';

export interface StartResult {
  deployment_id: string;
  rollout_ids: string[];
}

/** Body of `POST /rollouts` start-time overrides: they may only tighten (waves.ts applyOverrides). */
export interface RolloutOverrides {
  require_approval?: number[];
  failure_threshold?: FailureThreshold;
}

/** spec §4: a signed rollout of a published release (`POST /rollouts {release_id, overrides?}`). */
export const startSignedRollout: Command<{ releaseId: string; overrides?: RolloutOverrides | undefined }, StartResult> = async (
  uow,
  { releaseId, overrides },
) => {
  const { trx, tenant, now } = uow;
  const releaseUuid = normalizeUuid(releaseId);
  const rel = releaseUuid === undefined ? undefined : await getReleaseWithEnvelope(trx, tenant, releaseUuid);
  if (!rel) throw notFound(`release ${releaseId}`);
  // spec §4: re-verify the authorizer (a revoked key is no longer trusted), validity, tenant, product
  const v = verifyRelease(parseStoredEnvelope(rel.envelope_bytes), {
    trustedKeys: await trustedAuthorizerKeys(trx, tenant),
    tenant,
    product: rel.product,
    now,
  });
  // spec §4: envelope digests equal what was published
  if (v.envelopeDigest !== rel.envelope_digest)
    throw new ServerError('ROLLOUT_INVALID', `release: envelope digest ${v.envelopeDigest} differs from the published ${rel.envelope_digest}`);
  if (v.payloadDigest !== rel.payload_digest)
    throw new ServerError('ROLLOUT_INVALID', `release: payload digest ${v.payloadDigest} differs from the published ${rel.payload_digest}`);
  const p: ReleasePayload = v.payload;
  checkHealthProbe(p);
  const waves = parseWaves(p.rollout.waves, 'rollout.waves');
  const threshold = parseFailureThreshold(p.rollout.failure_threshold, 'rollout.failure_threshold');
  const members = transactionMembers(p);

  // spec §4: artifact records still match the signed components
  const artifactIds = await checkComponentArtifacts(trx, tenant, p);
  const groupId = p.rollout.target_group;
  const groupUuid = normalizeUuid(groupId);
  const g = groupUuid === undefined ? undefined : await targetGroup(trx, tenant, groupUuid, { lock: true });
  if (!g) throw new ServerError('GROUP_CHANGED', `rollout.target_group: group ${JSON.stringify(groupId)} no longer exists`);
  // spec §4: a changed group yields a different target-policy digest and the start is refused.
  // Recomputed from the members under the row lock rather than trusting the stored value; a
  // dynamic group's members are first materialized from its filter, so the start binds the
  // membership of this moment, which the signed digest must cover (docs/publish-and-deploy.md).
  const snap = await refreshGroupSnapshot(trx, tenant, g.id, now);
  checkTargetPolicyDigest(p, { id: g.id, digest: snap.digest });
  if (snap.count === 0) throw new ServerError('ROLLOUT_INVALID', `rollout.target_group: group ${g.id} has no devices`);
  // the digest covers every member; the rollout reaches the members still in service
  const devices = await inServiceMemberCount(trx, tenant, g.id);
  if (devices === 0) throw noDevicesInService('rollout.target_group', g.id, snap.count);
  // spec §4: device compatibility (of the devices the rollout reaches)
  const bad = await incompatibleDevices(trx, tenant, g.id, p.compatibility.profiles, SERVER_LIMITS.incompatibleDevicesShown + 1);
  if (bad.length > 0) {
    const shown = bad.slice(0, SERVER_LIMITS.incompatibleDevicesShown).join(', ');
    throw new ServerError(
      'DEVICE_INCOMPATIBLE',
      `compatibility.profiles: device${bad.length > 1 ? 's' : ''} ${shown}${bad.length > SERVER_LIMITS.incompatibleDevicesShown ? ' and more' : ''} report${bad.length > 1 ? '' : 's'} no profile in ${JSON.stringify(p.compatibility.profiles)}`,
    );
  }
  const deploymentId = randomUUID();
  const plan = planWaves(devices, waves);
  const { gated, threshold: effective } = applyOverrides({ waves, threshold }, overrides, plan.length);
  await insertDeployment(trx, {
    id: deploymentId,
    tenantId: tenant,
    kind: 'signed',
    releaseId: rel.id,
    artifactId: null,
    groupId: g.id,
    snapshot: snap.digest,
    memberCount: members.length,
    deviceCount: devices,
    threshold: effective,
    now,
  });
  const rolloutIds: string[] = [];
  for (const m of members) {
    const id = randomUUID();
    rolloutIds.push(id);
    await insertRollout(trx, {
      id,
      tenantId: tenant,
      deploymentId,
      kind: 'signed',
      releaseId: rel.id,
      artifactId: artifactIds.get(m.component)!,
      component: m.component,
      group: m.group,
      position: m.position,
      now,
    });
  }
  await insertWaves(
    trx,
    tenant,
    deploymentId,
    g.id,
    plan.map((w) => ({ ...w, requires_approval: w.requires_approval || gated.has(w.index) })),
    now,
  );
  await auditStart(uow, { kind: 'signed', releaseId: rel.id, deploymentId, rolloutIds, groupId: g.id, devices, decommissioned: snap.count - devices });
  // deltas from what these devices run to each new member of a DELTA_KINDS kind, built in the background
  await planDeltas(uow, { deploymentId, groupId: g.id, payload: p });
  return { deployment_id: deploymentId, rollout_ids: rolloutIds };
};

/** spec §4: a signed rollout needs a health probe (release-core admits an empty list in the document). */
function checkHealthProbe(p: ReleasePayload): void {
  const health = p.health as { probes?: unknown } | undefined;
  if (!health || !Array.isArray(health.probes) || health.probes.length === 0) {
    throw new ServerError('ROLLOUT_INVALID', 'health.probes: a signed rollout needs at least one health probe');
  }
}

/**
 * The waves of a legacy rollout request, by release-core's rule for that source (up to
 * LIMITS.legacyRolloutWaves, fractional percents). A refusal answers as the server's
 * WAVES_INVALID with the parser's message, like every other request field.
 */
function parseLegacyWaves(value: unknown): Wave[] | undefined {
  try {
    return parseWaves(value, 'waves', 'legacy-rollout');
  } catch (e) {
    if (isReleaseError(e, 'WAVES_INVALID')) throw new ServerError('WAVES_INVALID', e.message, { cause: e });
    throw e;
  }
}

/** spec §2.2 rule 3: an unsigned artifact to a group (`POST /rollouts {artifact_id, group_id, waves?}`). */
export const startLegacyRollout: Command<{ artifactId: string; groupId: string; waves?: unknown }, StartResult> = async (uow, input) => {
  const { trx, tenant, now } = uow;
  const waves = parseLegacyWaves(input.waves);
  const artifactUuid = normalizeUuid(input.artifactId);
  const a = artifactUuid === undefined ? undefined : await legacyArtifact(trx, tenant, artifactUuid);
  if (!a) throw new ServerError('ROLLOUT_INVALID', `artifact_id: no artifact ${input.artifactId}`);
  const groupUuid = normalizeUuid(input.groupId);
  const g = groupUuid === undefined ? undefined : await targetGroup(trx, tenant, groupUuid, { lock: true });
  if (!g) throw new ServerError('ROLLOUT_INVALID', `group_id: no group ${input.groupId}`);
  // a dynamic group's members as its filter selects them now, frozen into this rollout
  const snap = await refreshGroupSnapshot(trx, tenant, g.id, now);
  if (snap.count === 0) throw new ServerError('ROLLOUT_INVALID', `group_id: group ${g.id} has no devices`);
  const devices = await inServiceMemberCount(trx, tenant, g.id);
  if (devices === 0) throw noDevicesInService('group_id', g.id, snap.count);
  const deploymentId = randomUUID();
  await insertDeployment(trx, {
    id: deploymentId,
    tenantId: tenant,
    kind: 'legacy',
    releaseId: null,
    artifactId: a.id,
    groupId: g.id,
    snapshot: snap.digest,
    memberCount: 1,
    deviceCount: devices,
    threshold: undefined,
    now,
  });
  const id = randomUUID();
  await insertRollout(trx, {
    id,
    tenantId: tenant,
    deploymentId,
    kind: 'legacy',
    releaseId: null,
    artifactId: a.id,
    component: a.name,
    group: 0,
    position: 0,
    now,
  });
  await insertWaves(trx, tenant, deploymentId, g.id, planWaves(devices, waves), now);
  await auditStart(uow, { kind: 'legacy', releaseId: null, deploymentId, rolloutIds: [id], groupId: g.id, devices, decommissioned: snap.count - devices });
  return { deployment_id: deploymentId, rollout_ids: [id] };
};

/** A group whose every member is decommissioned: nothing would ever report, so nothing starts. */
function noDevicesInService(field: string, groupId: string, members: number): ServerError {
  return new ServerError(
    'ROLLOUT_INVALID',
    `${field}: group ${groupId} has no devices in service (${members === 1 ? 'its one member is' : `all ${members} members are`} decommissioned)`,
  );
}

async function insertWaves(db: Db, tenantId: string, deploymentId: string, groupId: string, plan: PlannedWave[], now: Date): Promise<void> {
  const rows = initialWaves(plan.map((w) => ({ index: w.index, size: w.size, requires_approval: w.requires_approval })));
  const bounds = waveBounds(plan);
  const assigned = await insertWavesAndDevices(
    db,
    tenantId,
    deploymentId,
    groupId,
    rows.map((w, i) => ({ ...w, name: plan[i]!.name })),
    bounds,
    now,
  );
  // a member left (or came back to) service between the count and the assignment: the waves
  // would not add up to the devices, so nothing is kept and the start is refused
  const planned = bounds[bounds.length - 1] ?? 0;
  if (assigned !== planned) {
    throw new ServerError(
      'CONFLICT',
      `group ${groupId}: a member's status changed while the rollout started (${assigned} devices, ${planned} planned); start it again`,
    );
  }
  if (assigned >= SERVER_TUNING.analyzeAfterAssignedDevices) await analyzeDeploymentDevices(db);
}

async function auditStart(
  uow: UnitOfWork,
  s: {
    kind: 'signed' | 'legacy';
    releaseId: string | null;
    deploymentId: string;
    rolloutIds: string[];
    groupId: string;
    devices: number;
    decommissioned: number;
  },
): Promise<void> {
  await uow.audit({
    action: 'rollout.start',
    target: `rollout:${s.rolloutIds[0]!}`,
    detail: {
      kind: s.kind,
      release_id: s.releaseId,
      transaction_id: transactionIdOf({ kind: s.kind, deployment_id: s.deploymentId }),
      rollouts: s.rolloutIds,
      group_id: s.groupId,
      devices: s.devices,
      // members left out because they are decommissioned
      decommissioned: s.decommissioned,
    },
  });
}

export type RolloutAction = 'approve' | 'resume' | 'abort';

/**
 * Operator controls (spec §4: approve, resume, abort), acting on the whole deployment of the
 * member rollout `id`; 409 ROLLOUT_STATE when the action does not apply now. Abort stops
 * handing out work; devices that already started finish and their receipts are still accepted.
 */
export const controlRollout: Command<{ id: string; action: RolloutAction }, void> = async (uow, { id, action }) => {
  const rolloutUuid = normalizeUuid(id);
  const d = rolloutUuid === undefined ? undefined : await lockRolloutDeployment(uow.trx, uow.tenant, rolloutUuid);
  if (!d) throw notFound(`rollout ${id}`);
  const waves = (await wavesOf(uow.trx, [d.id])).get(d.id) ?? [];
  if (d.aborted_at !== null) throw new ServerError('ROLLOUT_STATE', `rollout ${id}: is aborted`);
  let status: RolloutStatus;
  let next: WaveRow[] | null = null;
  if (action === 'abort') {
    if (rolloutStatus(waves, false) === 'completed') throw new ServerError('ROLLOUT_STATE', `rollout ${id}: is already completed`);
    await setAborted(uow.trx, d.id, uow.now);
    status = rolloutStatus(waves, true);
  } else {
    next = action === 'approve' ? approve(waves, d.failure_threshold ?? undefined) : resume(waves, d.failure_threshold ?? undefined);
    if (!next) throw new ServerError('ROLLOUT_STATE', `rollout ${id}: no wave is ${action === 'approve' ? 'waiting for approval' : 'paused'}`);
    await writeWaves(uow.trx, d.id, waves, next, uow.now);
    status = rolloutStatus(next, false);
  }
  await uow.audit({
    action: `rollout.${action}`,
    target: `rollout:${id}`,
    detail: { status, transaction_id: transactionIdOf({ kind: d.kind, deployment_id: d.id }) },
  });
  // the waves an approval or a resume moved (the approved wave done, the next one opened) are
  // on the timeline like those a result moves
  if (next !== null) await auditWaveChanges(uow, d.id, waves, next);
};

/** Device state, deployment counters and wave progression of one terminal result (deployment row locked by the caller). */
async function recordDeviceResult(
  uow: UnitOfWork,
  d: { id: string; failure_threshold: FailureThreshold | null },
  device: string,
  waveIdx: number,
  state: Exclude<DeviceState, 'pending'>,
  receiptId: string | null,
): Promise<void> {
  await setDeviceResult(uow.trx, d.id, device, state, receiptId, uow.now);
  const before = (await wavesOf(uow.trx, [d.id])).get(d.id) ?? [];
  // spec §4: the failure threshold from the constraints is evaluated as results arrive
  const after = recordResult(before, waveIdx, isFailure(state), d.failure_threshold ?? undefined);
  await writeWaves(uow.trx, d.id, before, after, uow.now);
  await auditWaveChanges(uow, d.id, before, after);
}

/**
 * One `rollout.wave` audit row (actor `system:rollout`) per wave whose state a result moved
 * (opened, paused by the failure threshold, done), in the result's unit of work: the rollout's
 * timeline reads them. Results that move no wave write none.
 */
async function auditWaveChanges(uow: UnitOfWork, deploymentId: string, before: readonly WaveRow[], after: readonly WaveRow[]): Promise<void> {
  const moved = after.flatMap((w) => {
    const from = before.find((b) => b.index === w.index)?.state;
    return from !== undefined && from !== w.state ? [{ wave: w.index, from, to: w.state }] : [];
  });
  if (moved.length === 0) return;
  const r = (await deploymentRollouts(uow.trx, [deploymentId])).get(deploymentId)!;
  await uow.auditMany(
    moved.map((m) => ({
      action: 'rollout.wave',
      target: `rollout:${r.rollout_ids[0]!}`,
      actor: systemActor('rollout'),
      detail: { ...m, transaction_id: transactionIdOf({ kind: r.kind, deployment_id: deploymentId }) },
    })),
  );
}

/**
 * Counters and wave progression of terminal results whose device rows this transaction has
 * already moved (`claimPendingDevices`): the deployment row is locked here, last, so it is held
 * for this read, one write and COMMIT only. The results apply in order, each through the same
 * `recordResult` as a single one, so a batch ends where one-by-one acceptance would.
 */
export async function recordDeviceResults(
  uow: UnitOfWork,
  deploymentId: string,
  results: readonly { waveIdx: number; state: Exclude<DeviceState, 'pending'> }[],
): Promise<void> {
  if (results.length === 0) return;
  const { failure_threshold, waves: before } = await lockDeploymentWaves(uow.trx, deploymentId);
  let after = before;
  const counts = { committed: 0, 'rolled back': 0, failed: 0, installed: 0, skipped: 0 };
  for (const r of results) {
    counts[r.state] += 1;
    // spec §4: the failure threshold from the constraints is evaluated as results arrive
    after = recordResult(after, r.waveIdx, isFailure(r.state), failure_threshold ?? undefined);
  }
  await addDeviceResults(uow.trx, deploymentId, counts, before, after, uow.now);
  await auditWaveChanges(uow, deploymentId, before, after);
}

/**
 * Legacy status (spec §2.3 rule 6), from the device channel as `device:<name>`: appended to an
 * append-only table labelled `device-reported`; the first terminal report moves the device's
 * legacy progress, later ones are history. Never upgraded to evidence.
 */
export const reportLegacyStatus: Command<{ deviceName: string; rolloutId: string; status: 'installed' | 'failed'; detail?: string | undefined }, void> = async (
  uow,
  args,
) => {
  if (args.status !== 'installed' && args.status !== 'failed') throw new ServerError('ROLLOUT_INVALID', 'status: must be installed or failed');
  if (args.detail !== undefined && args.detail.length > LIMITS.legacyDetailChars)
    throw invalidInput('detail', `longer than ${LIMITS.legacyDetailChars} characters`);
  const rolloutUuid = normalizeUuid(args.rolloutId);
  const r = rolloutUuid === undefined ? undefined : await legacyRollout(uow.trx, uow.tenant, rolloutUuid);
  if (!r) throw new ServerError('RECEIPT_UNEXPECTED', `rollout_id: no legacy rollout ${args.rolloutId} in this tenant`);
  // the device row before the deployment row, the order of the receipt path and of decommissioning
  const dd = (await lockDeploymentDevices(uow.trx, r.deployment_id, [args.deviceName])).get(args.deviceName);
  const d = await lockDeployment(uow.trx, r.deployment_id);
  if (!dd) throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} is not assigned to rollout ${args.rolloutId}`);
  // settled when it was decommissioned: back in service, it reports nothing more to this rollout
  if (dd.state === 'skipped')
    throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} was decommissioned while it was pending in rollout ${args.rolloutId} (skipped)`);
  await insertLegacyReport(uow.trx, {
    tenantId: uow.tenant,
    deploymentId: d.id,
    rolloutId: r.id,
    device: args.deviceName,
    status: args.status,
    detail: args.detail ?? null,
    now: uow.now,
  });
  // the first terminal report counts; later reports are kept as history only
  if (dd.state === 'pending') await recordDeviceResult(uow, d, args.deviceName, dd.wave_idx, deviceStateFromLegacy(args.status), null);
  await uow.audit({ action: 'rollout.legacy-status', target: `rollout:${r.id}`, detail: { status: args.status, label: 'device-reported' } });
};

/**
 * A device decommissioned while it still owes results: each of its pending rows (in every
 * deployment, whatever its wave, and so in every member rollout of a transaction) moves to
 * `skipped`, and each deployment's counters and waves advance through `recordDeviceResults`
 * (a skipped device is done and not failed), so a wave waiting only for it completes. One
 * `rollout.device-skip` audit row per deployment, in the caller's unit of work. Rows already
 * settled stay as they are: leaving the decommissioned status later brings none back.
 */
export async function skipDecommissionedDevice(uow: UnitOfWork, device: string): Promise<void> {
  const moved = await skipPendingDevice(uow.trx, uow.tenant, device, uow.now);
  if (moved.length === 0) return;
  const rollouts = await deploymentRollouts(
    uow.trx,
    moved.map((m) => m.deployment_id),
  );
  await uow.auditMany(
    moved.map((m) => {
      const r = rollouts.get(m.deployment_id)!;
      return {
        action: 'rollout.device-skip',
        target: `rollout:${r.rollout_ids[0]!}`,
        detail: {
          device,
          reason: 'decommissioned',
          wave: m.wave_idx,
          transaction_id: transactionIdOf({ kind: r.kind, deployment_id: m.deployment_id }),
          rollouts: r.rollout_ids,
        },
      };
    }),
  );
  // counters and waves last, one deployment row at a time in id order, as the receipt path does
  for (const m of moved) await recordDeviceResults(uow, m.deployment_id, [{ waveIdx: m.wave_idx, state: 'skipped' }]);
}
