/**
 * Rollout start (spec 4 "Rollout start against a published release", spec 3 rules 1-3).
 *
 * Signed: re-verify EVERYTHING against current state - authorizer key still registered and not
 * revoked (verifyRelease again on the stored envelope), envelope and payload digests, the CURRENT
 * group snapshot digest (computed from the members under the group row lock), artifact records,
 * device compatibility, health policy, waves and recovery policy - then create the deployment
 * (its id IS the transaction id), one member rollout per component (group and position from
 * release-core transactionMembers), the waves and the per-device rows in ONE database
 * transaction, so no device sees any work before every signed component is resolved.
 *
 * Legacy: an artifact to a group, labelled `legacy` everywhere (spec 2.2.3, 9.4).
 */
import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import { transactionMembers, verifyRelease, type ReleasePayload } from '@svc/release-core';
import type { Database } from '../store/database.js';
import { trustedAuthorizerKeys } from '../resources/authorizer-keys/queries.js';
import { type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import type { PipelineDeps } from '../resources/pipeline-deps.js';
import { computeSnapshotDigest } from '../resources/groups/snapshot.js';
import { initialWaves } from './progression.js';
import { checkComponentArtifacts, releaseEnvelope } from './releases.js';
import { applyOverrides, parseFailureThreshold, parseWaves, planWaves, waveBounds, type FailureThreshold, type WaveSpec } from './waves.js';
import { ServerError } from '../errors/server-error.js';

export interface StartResult {
  deployment_id: string;
  rollout_ids: string[];
}

const MAX_INCOMPATIBLE_SHOWN = 5;

/** Devices of the group whose reported profile is not in the signed list (or unknown), capped for the message. */
async function incompatibleDevices(db: Db, tenantId: string, groupId: string, profiles: string[]): Promise<string[]> {
  // anti-join in member-key order: it stops at the first few offenders instead of sorting the group
  const rows = await db
    .selectFrom('device_group_members as m')
    .select('m.device_name')
    .where('m.tenant_id', '=', tenantId)
    .where('m.group_id', '=', groupId)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('devices as d').select('d.id').whereRef('d.tenant_id', '=', 'm.tenant_id').whereRef('d.name', '=', 'm.device_name').where('d.profile', 'in', profiles))),
    )
    .orderBy('m.group_id')
    .orderBy('m.device_name')
    .limit(MAX_INCOMPATIBLE_SHOWN + 1)
    .execute();
  return rows.map((r) => r.device_name);
}

/** Body of `POST /rollouts` start-time overrides: they may only tighten (waves.ts applyOverrides). */
export interface RolloutOverrides {
  require_approval?: number[];
  failure_threshold?: FailureThreshold;
}

export async function startSignedRollout(deps: PipelineDeps, tenantId: string, releaseId: string, overrides: RolloutOverrides | undefined): Promise<StartResult> {
  const db = deps.db;
  const now = deps.clock();
  const rel = await releaseEnvelope(db, tenantId, releaseId);
  if (!rel) throw new ServerError('NOT_FOUND', `release ${releaseId} not found`);
  // spec 4: re-verify the authorizer (a revoked key is no longer trusted), validity, tenant, product
  const v = verifyRelease(rel.envelope, { trustedKeys: await trustedAuthorizerKeys(db, tenantId), tenant: tenantId, product: rel.row.product, now });
  // spec 4: envelope digests equal what was published
  if (v.envelopeDigest !== rel.row.envelope_digest) throw new ServerError('ROLLOUT_INVALID', `release: envelope digest ${v.envelopeDigest} differs from the published ${rel.row.envelope_digest}`);
  if (v.payloadDigest !== rel.row.payload_digest) throw new ServerError('ROLLOUT_INVALID', `release: payload digest ${v.payloadDigest} differs from the published ${rel.row.payload_digest}`);
  const p: ReleasePayload = v.payload;
  checkPolicies(p);
  const waves = parseWaves(p.rollout.waves, 'rollout.waves');
  const threshold = parseFailureThreshold((p.rollout as unknown as Record<string, unknown>)['failure_threshold'], 'rollout.failure_threshold');
  const members = transactionMembers(p);

  return db.transaction().execute(async (trx) => {
    // spec 4: artifact records still match the signed components
    const artifactIds = await checkComponentArtifacts(trx, tenantId, p);
    const groupId = p.rollout.target_group;
    const g = isUuid(groupId)
      ? await trx.selectFrom('device_groups').select(['id']).where('tenant_id', '=', tenantId).where('id', '=', groupId).forUpdate().executeTakeFirst()
      : undefined;
    if (!g) throw new ServerError('GROUP_CHANGED', `rollout.target_group: group ${JSON.stringify(groupId)} no longer exists`);
    // spec 4: a changed group yields a different target-policy digest and the start is refused.
    // Recomputed from the members under the row lock rather than trusting the stored value.
    const snap = await computeSnapshotDigest(trx, tenantId, g.id);
    if (snap.digest !== p.rollout.target_policy_digest) {
      throw new ServerError('GROUP_CHANGED', `rollout.target_policy_digest: signed ${p.rollout.target_policy_digest} but group ${g.id} is now ${snap.digest}`);
    }
    if (snap.count === 0) throw new ServerError('ROLLOUT_INVALID', `rollout.target_group: group ${g.id} has no devices`);
    // spec 4: device compatibility
    const bad = await incompatibleDevices(trx, tenantId, g.id, p.compatibility.profiles);
    if (bad.length > 0) {
      const shown = bad.slice(0, MAX_INCOMPATIBLE_SHOWN).join(', ');
      throw new ServerError(
        'DEVICE_INCOMPATIBLE',
        `compatibility.profiles: device${bad.length > 1 ? 's' : ''} ${shown}${bad.length > MAX_INCOMPATIBLE_SHOWN ? ' and more' : ''} report${bad.length > 1 ? '' : 's'} no profile in ${JSON.stringify(p.compatibility.profiles)}`,
      );
    }
    const deploymentId = randomUUID();
    const plan = planWaves(snap.count, waves);
    const { gated, threshold: effective } = applyOverrides({ waves, threshold }, overrides, plan.length);
    await insertDeployment(trx, {
      id: deploymentId, tenantId, kind: 'signed', releaseId: rel.row.id, artifactId: null, groupId: g.id, snapshot: snap.digest,
      memberCount: members.length, deviceCount: snap.count, threshold: effective, now,
    });
    const rolloutIds: string[] = [];
    for (const m of members) {
      const id = randomUUID();
      rolloutIds.push(id);
      await trx
        .insertInto('rollouts')
        .values({ id, tenant_id: tenantId, deployment_id: deploymentId, kind: 'signed', release_id: rel.row.id, artifact_id: artifactIds.get(m.component)!, component: m.component, group_index: m.group, position: m.position, created_at: now })
        .execute();
    }
    await insertWavesAndDevices(trx, tenantId, deploymentId, g.id, plan.map((w) => ({ ...w, requires_approval: w.requires_approval || gated.has(w.index) })), now);
    return { deployment_id: deploymentId, rollout_ids: rolloutIds };
  });
}

/** spec 4: health probe present, recovery policy right for a multi-component Linux release. */
function checkPolicies(p: ReleasePayload): void {
  const health = p.health as { probes?: unknown } | undefined;
  if (!health || !Array.isArray(health.probes) || health.probes.length === 0) {
    throw new ServerError('ROLLOUT_INVALID', 'health.probes: a signed rollout needs at least one health probe');
  }
  // spec 2.1: multi-component Linux release -> on_failure rollback, rollback_boundary release
  if (p.components.length > 1 && p.compatibility.profiles.some((x) => x.startsWith('linux-'))) {
    if (p.recovery.on_failure !== 'rollback') throw new ServerError('ROLLOUT_INVALID', `recovery.on_failure: must be "rollback" for a multi-component Linux release, got ${JSON.stringify(p.recovery.on_failure)}`);
    if (p.recovery.rollback_boundary !== 'release') {
      throw new ServerError('ROLLOUT_INVALID', `recovery.rollback_boundary: must be "release" for a multi-component Linux release, got ${JSON.stringify(p.recovery.rollback_boundary)}`);
    }
  }
}

export async function startLegacyRollout(deps: PipelineDeps, tenantId: string, body: { artifact_id: string; group_id: string; waves?: unknown }): Promise<StartResult> {
  const db = deps.db;
  const now = deps.clock();
  const waves: WaveSpec[] | undefined = parseWaves(body.waves, 'waves');
  if (!isUuid(body.artifact_id)) throw new ServerError('ROLLOUT_INVALID', `artifact_id: no artifact ${body.artifact_id}`);
  if (!isUuid(body.group_id)) throw new ServerError('ROLLOUT_INVALID', `group_id: no group ${body.group_id}`);
  return db.transaction().execute(async (trx) => {
    const a = await trx.selectFrom('artifacts').select(['id', 'name']).where('tenant_id', '=', tenantId).where('id', '=', body.artifact_id).executeTakeFirst();
    if (!a) throw new ServerError('ROLLOUT_INVALID', `artifact_id: no artifact ${body.artifact_id}`);
    const g = await trx.selectFrom('device_groups').select('id').where('tenant_id', '=', tenantId).where('id', '=', body.group_id).forUpdate().executeTakeFirst();
    if (!g) throw new ServerError('ROLLOUT_INVALID', `group_id: no group ${body.group_id}`);
    const snap = await computeSnapshotDigest(trx, tenantId, g.id);
    if (snap.count === 0) throw new ServerError('ROLLOUT_INVALID', `group_id: group ${g.id} has no devices`);
    const deploymentId = randomUUID();
    await insertDeployment(trx, { id: deploymentId, tenantId, kind: 'legacy', releaseId: null, artifactId: a.id, groupId: g.id, snapshot: snap.digest, memberCount: 1, deviceCount: snap.count, threshold: undefined, now });
    const id = randomUUID();
    await trx
      .insertInto('rollouts')
      .values({ id, tenant_id: tenantId, deployment_id: deploymentId, kind: 'legacy', release_id: null, artifact_id: a.id, component: a.name, group_index: 0, position: 0, created_at: now })
      .execute();
    await insertWavesAndDevices(trx, tenantId, deploymentId, g.id, planWaves(snap.count, waves), now);
    return { deployment_id: deploymentId, rollout_ids: [id] };
  });
}

async function insertDeployment(
  trx: Transaction<Database>,
  d: { id: string; tenantId: string; kind: 'signed' | 'legacy'; releaseId: string | null; artifactId: string | null; groupId: string; snapshot: string; memberCount: number; deviceCount: number; threshold: FailureThreshold | undefined; now: Date },
): Promise<void> {
  await trx
    .insertInto('deployments')
    .values({
      id: d.id,
      tenant_id: d.tenantId,
      kind: d.kind,
      release_id: d.releaseId,
      artifact_id: d.artifactId,
      group_id: d.groupId,
      snapshot_digest: d.snapshot,
      member_count: d.memberCount,
      device_count: d.deviceCount,
      failure_threshold: d.threshold ? JSON.stringify(d.threshold) : null,
      aborted_at: null,
      created_at: d.now,
    })
    .execute();
}

/**
 * Waves and one row per device, assigned in SQL: devices ranked by sha256(deployment id ":"
 * name) (deterministic, the rule of waves.ts) and cut at the planned wave bounds. One
 * INSERT ... SELECT, so a 100k-device group never travels through the process.
 */
async function insertWavesAndDevices(
  trx: Transaction<Database>,
  tenantId: string,
  deploymentId: string,
  groupId: string,
  plan: { index: number; name: string; size: number; requires_approval: boolean }[],
  now: Date,
): Promise<void> {
  const rows = initialWaves(plan.map((w) => ({ index: w.index, size: w.size, requires_approval: w.requires_approval })));
  await trx
    .insertInto('deployment_waves')
    .values(
      rows.map((w, i) => ({
        deployment_id: deploymentId, tenant_id: tenantId, idx: w.index, name: plan[i]!.name, size: w.size, requires_approval: w.requires_approval, state: w.state, updated_at: now,
      })),
    )
    .execute();
  const bounds = waveBounds(plan);
  const cases = sql.join(bounds.map((b, i) => sql`WHEN rn <= ${sql.lit(b)} THEN ${sql.lit(i)}`), sql` `);
  await sql`
    INSERT INTO deployment_devices (deployment_id, tenant_id, device_name, wave_idx)
    SELECT ${deploymentId}::uuid, ${tenantId}::uuid, device_name, CASE ${cases} END
    FROM (
      SELECT device_name, row_number() OVER (ORDER BY sha256(convert_to(${deploymentId + ':'} || device_name, 'UTF8'))) AS rn
      FROM device_group_members WHERE tenant_id = ${tenantId} AND group_id = ${groupId}
    ) ranked`.execute(trx);
}
