/**
 * Deployments, their member rollouts, waves and per-device rows. A member rollout belongs to a
 * deployment; waves, device progress and controls live on the deployment, so every member of a
 * release transaction moves together. Writers lock the deployment row (`lockDeployment`), so
 * two server processes never interleave a transition.
 */
import type { Digest, FailureThreshold } from '@svc/release-core';
import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { DeploymentsTable, RolloutsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';
import type { WaveRow } from './progression.js';
import type { DeviceState, WaveState } from './states.js';

export type RolloutKind = 'signed' | 'legacy';

/** A member rollout joined with its deployment's progress counters. */
export type RolloutRow = Omit<Selectable<RolloutsTable>, 'tenant_id'> &
  Pick<
    Selectable<DeploymentsTable>,
    'group_id' | 'device_count' | 'aborted_at' | 'n_committed' | 'n_rolled_back' | 'n_failed' | 'n_installed' | 'n_skipped'
  > & {
    /** The release's product, or the artifact's name for a legacy rollout. */
    product: string;
    /** The release's version, or the artifact's version for a legacy rollout. */
    version: string;
    /** The target group's name (kept after the group is deleted). */
    group_name: string;
  };

function rolloutsJoined(db: Db, tenantId: string) {
  return db
    .selectFrom('rollouts as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .innerJoin('device_groups as g', 'g.id', 'd.group_id')
    .innerJoin('artifacts as a', 'a.id', 'r.artifact_id')
    .leftJoin('releases as rel', 'rel.id', 'r.release_id')
    .where('r.tenant_id', '=', tenantId)
    .select((eb) => [eb.fn.coalesce('rel.product', 'a.name').as('product'), eb.fn.coalesce('rel.version', 'a.version').as('version'), 'g.name as group_name'])
    .select([
      'r.id',
      'r.kind',
      'r.release_id',
      'r.deployment_id',
      'r.artifact_id',
      'r.component',
      'r.group_index',
      'r.position',
      'r.created_at',
      'd.group_id',
      'd.device_count',
      'd.aborted_at',
      'd.n_committed',
      'd.n_rolled_back',
      'd.n_failed',
      'd.n_installed',
      'd.n_skipped',
    ]);
}

export async function rolloutPage(
  db: Db,
  tenantId: string,
  filter: { kind?: RolloutKind | undefined; releaseId?: string | undefined },
  limit: number,
  offset: number,
): Promise<{ rows: RolloutRow[]; total: number }> {
  let q = rolloutsJoined(db, tenantId);
  if (filter.kind !== undefined) q = q.where('r.kind', '=', filter.kind);
  if (filter.releaseId !== undefined) q = q.where('r.release_id', '=', filter.releaseId);
  const rows = (await q.orderBy('r.created_at', 'desc').orderBy('r.position').orderBy('r.id').limit(limit).offset(offset).execute()) as RolloutRow[];
  const total = await q
    .clearSelect()
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return { rows, total: Number(total.n) };
}

/** spec §8 counts: the tenant's member rollouts by kind (the whole set, not the filtered one). */
export async function rolloutCountsByKind(db: Db, tenantId: string): Promise<Record<RolloutKind, number>> {
  const kinds = await db
    .selectFrom('rollouts')
    .select(['kind', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('kind')
    .execute();
  const counts: Record<RolloutKind, number> = { signed: 0, legacy: 0 };
  for (const k of kinds) counts[k.kind] = Number(k.n);
  return counts;
}

/** `id` must be a UUID. */
export async function rolloutById(db: Db, tenantId: string, id: string): Promise<RolloutRow | undefined> {
  return await rolloutsJoined(db, tenantId).where('r.id', '=', id).executeTakeFirst();
}

export type WaveDetailRow = WaveRow & { name: string };

/** The waves of each deployment, in order. */
export async function wavesOf(db: Db, deploymentIds: string[]): Promise<Map<string, WaveDetailRow[]>> {
  const out = new Map<string, WaveDetailRow[]>();
  if (deploymentIds.length === 0) return out;
  const rows = await db
    .selectFrom('deployment_waves')
    .selectAll()
    .where('deployment_id', 'in', deploymentIds)
    .orderBy('deployment_id')
    .orderBy('idx')
    .execute();
  for (const w of rows) {
    const list = out.get(w.deployment_id) ?? [];
    list.push({
      index: w.idx,
      name: w.name,
      size: w.size,
      requires_approval: w.requires_approval,
      state: w.state as WaveState,
      done: w.done,
      failed: w.failed,
      failures_acknowledged: w.failures_acknowledged,
    });
    out.set(w.deployment_id, list);
  }
  return out;
}

export async function deploymentMembers(db: Db, deploymentId: string) {
  return db
    .selectFrom('rollouts')
    .select(['id', 'component', 'group_index', 'position', 'artifact_id'])
    .where('deployment_id', '=', deploymentId)
    .orderBy('position')
    .execute();
}

export async function deploymentThreshold(db: Db, deploymentId: string): Promise<FailureThreshold | null> {
  const d = await db.selectFrom('deployments').select('failure_threshold').where('id', '=', deploymentId).executeTakeFirstOrThrow();
  return d.failure_threshold ?? null;
}

/** One page of a deployment's devices in byte order of names. */
export async function deploymentDevicePage(db: Db, tenantId: string, deploymentId: string, limit: number, offset: number) {
  return db
    .selectFrom('deployment_devices')
    .select(['device_name', 'wave_idx', 'state', 'updated_at'])
    .where('tenant_id', '=', tenantId)
    .where('deployment_id', '=', deploymentId)
    .orderBy(sql`device_name COLLATE "C"`)
    .limit(limit)
    .offset(offset)
    .execute();
}

/** Devices of one failure reason: how many, and the first by name. */
export interface FailureReasonRow {
  reason: string;
  count: number;
  devices: string[];
}

/**
 * The deployment's failed and rolled-back devices grouped by what their evidence says, most
 * frequent first: for signed work the receipt's activation and health and the members it marks
 * failed; for legacy work the detail of the device's first failure report.
 */
export async function deploymentFailureReasons(
  db: Db,
  tenantId: string,
  deploymentId: string,
  kind: RolloutKind,
  bounds: { reasons: number; devicesPerReason: number },
): Promise<FailureReasonRow[]> {
  const reason =
    kind === 'signed'
      ? sql<string>`(SELECT rr.activation || ', health ' || rr.health || coalesce(': failed ' || (
            SELECT string_agg(m->>'component', ', ' ORDER BY (m->>'position')::int)
            FROM jsonb_array_elements(coalesce(rr.payload->'members', '[]'::jsonb)) AS m
            WHERE m->>'verdict' = 'failed'), '')
          FROM release_receipts rr WHERE rr.id = dd.receipt_id)`
      : sql<string>`(SELECT l.detail FROM legacy_status_reports l
          WHERE l.deployment_id = dd.deployment_id AND l.device_name = dd.device_name AND l.status = 'failed'
          ORDER BY l.reported_at LIMIT 1)`;
  const rows = await sql<{ reason: string | null; n: number; devices: string[] }>`
    SELECT reason, count(*)::int AS n, (array_agg(device_name ORDER BY device_name COLLATE "C"))[1:${bounds.devicesPerReason}] AS devices
    FROM (SELECT dd.device_name, ${reason} AS reason FROM deployment_devices dd
          WHERE dd.tenant_id = ${tenantId} AND dd.deployment_id = ${deploymentId}::uuid AND dd.state IN ('failed', 'rolled back')) AS f
    GROUP BY reason ORDER BY n DESC, reason COLLATE "C" LIMIT ${bounds.reasons}`.execute(db);
  return rows.rows.map((r) => ({ reason: r.reason ?? (kind === 'signed' ? 'no receipt' : 'failed (no detail reported)'), count: r.n, devices: r.devices }));
}

/** The deployment of a member rollout of this tenant, row-locked; `rolloutId` must be a UUID. */
export async function lockRolloutDeployment(db: Db, tenantId: string, rolloutId: string) {
  const r = await db.selectFrom('rollouts').select(['deployment_id', 'kind']).where('tenant_id', '=', tenantId).where('id', '=', rolloutId).executeTakeFirst();
  if (!r) return undefined;
  const d = await lockDeployment(db, r.deployment_id);
  return { ...d, kind: r.kind };
}

/** Locks a deployment row: wave counters and progression are read-modify-write. */
export async function lockDeployment(
  db: Db,
  deploymentId: string,
): Promise<{ id: string; aborted_at: Date | null; failure_threshold: FailureThreshold | null }> {
  const d = await db
    .selectFrom('deployments')
    .select(['id', 'aborted_at', 'failure_threshold'])
    .where('id', '=', deploymentId)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return { id: d.id, aborted_at: d.aborted_at, failure_threshold: d.failure_threshold ?? null };
}

export async function setAborted(db: Db, deploymentId: string, now: Date): Promise<void> {
  await db.updateTable('deployments').set({ aborted_at: now }).where('id', '=', deploymentId).execute();
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

const COUNTER: Record<Exclude<DeviceState, 'pending'>, 'n_committed' | 'n_rolled_back' | 'n_failed' | 'n_installed' | 'n_skipped'> = {
  committed: 'n_committed',
  'rolled back': 'n_rolled_back',
  failed: 'n_failed',
  installed: 'n_installed',
  skipped: 'n_skipped',
};

/** A device's terminal state and the deployment's counter for it. */
export async function setDeviceResult(
  db: Db,
  deploymentId: string,
  device: string,
  state: Exclude<DeviceState, 'pending'>,
  receiptId: string | null,
  now: Date,
): Promise<void> {
  await db
    .updateTable('deployment_devices')
    .set({ state, receipt_id: receiptId, updated_at: now })
    .where('deployment_id', '=', deploymentId)
    .where('device_name', '=', device)
    .execute();
  const col = COUNTER[state];
  await db
    .updateTable('deployments')
    .set((eb) => ({ [col]: eb(col, '+', 1) }))
    .where('id', '=', deploymentId)
    .execute();
}

/** The member `m` is no decommissioned device of its tenant (an anti-join against the few decommissioned). */
const memberInService = sql<boolean>`NOT EXISTS (SELECT 1 FROM devices x WHERE x.tenant_id = m.tenant_id AND x.name = m.device_name AND x.status = 'decommissioned')`;

/**
 * How many members of the group a rollout starting now reaches: every member but the
 * decommissioned devices (a decommissioned device never checks in, so it never reports).
 */
export async function inServiceMemberCount(db: Db, tenantId: string, groupId: string): Promise<number> {
  const r = await db
    .selectFrom('device_group_members as m')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('m.tenant_id', '=', tenantId)
    .where('m.group_id', '=', groupId)
    .where(memberInService)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Devices of the group still in service whose reported profile is not in `profiles` (or unknown), at most `max`. */
export async function incompatibleDevices(db: Db, tenantId: string, groupId: string, profiles: string[], max: number): Promise<string[]> {
  // anti-join in member-key order: it stops at the first few offenders instead of sorting the group
  const rows = await db
    .selectFrom('device_group_members as m')
    .select('m.device_name')
    .where('m.tenant_id', '=', tenantId)
    .where('m.group_id', '=', groupId)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('devices as d')
            .select('d.id')
            .whereRef('d.tenant_id', '=', 'm.tenant_id')
            .whereRef('d.name', '=', 'm.device_name')
            .where('d.profile', 'in', profiles),
        ),
      ),
    )
    .where(memberInService)
    .orderBy('m.group_id')
    .orderBy('m.device_name')
    .limit(max)
    .execute();
  return rows.map((r) => r.device_name);
}

/** An artifact of the tenant (legacy rollouts); `id` must be a UUID. */
export async function legacyArtifact(db: Db, tenantId: string, id: string) {
  return db.selectFrom('artifacts').select(['id', 'name']).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export async function insertDeployment(
  db: Db,
  d: {
    id: string;
    tenantId: string;
    kind: RolloutKind;
    releaseId: string | null;
    artifactId: string | null;
    groupId: string;
    snapshot: Digest;
    memberCount: number;
    deviceCount: number;
    threshold: FailureThreshold | undefined;
    now: Date;
  },
): Promise<void> {
  await db
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

export async function insertRollout(
  db: Db,
  r: {
    id: string;
    tenantId: string;
    deploymentId: string;
    kind: RolloutKind;
    releaseId: string | null;
    artifactId: string;
    component: string;
    group: number;
    position: number;
    now: Date;
  },
): Promise<void> {
  await db
    .insertInto('rollouts')
    .values({
      id: r.id,
      tenant_id: r.tenantId,
      deployment_id: r.deploymentId,
      kind: r.kind,
      release_id: r.releaseId,
      artifact_id: r.artifactId,
      component: r.component,
      group_index: r.group,
      position: r.position,
      created_at: r.now,
    })
    .execute();
}

/**
 * Waves and one row per device, assigned in SQL: the group's members still in service (the
 * decommissioned are left out: they never report) ranked by sha256(deployment id ":" name)
 * (deterministic, the rule of waves.ts) and cut at the wave `bounds` (cumulative sizes). One
 * INSERT ... SELECT, so a 100k-device group never travels through the process. Returns the rows
 * inserted: the caller planned the bounds for `inServiceMemberCount` and checks they agree.
 */
export async function insertWavesAndDevices(
  db: Db,
  tenantId: string,
  deploymentId: string,
  groupId: string,
  waves: (WaveRow & { name: string })[],
  bounds: number[],
  now: Date,
): Promise<number> {
  await db
    .insertInto('deployment_waves')
    .values(
      waves.map((w) => ({
        deployment_id: deploymentId,
        tenant_id: tenantId,
        idx: w.index,
        name: w.name,
        size: w.size,
        requires_approval: w.requires_approval,
        state: w.state,
        updated_at: now,
      })),
    )
    .execute();
  const cases = sql.join(
    bounds.map((b, i) => sql`WHEN rn <= ${sql.lit(b)} THEN ${sql.lit(i)}`),
    sql` `,
  );
  // a rank beyond the plan (a member back in service since it was counted) lands past the last
  // wave, and the caller's count check refuses the start
  const r = await sql`
    INSERT INTO deployment_devices (deployment_id, tenant_id, device_name, wave_idx)
    SELECT ${deploymentId}::uuid, ${tenantId}::uuid, device_name, CASE ${cases} ELSE ${sql.lit(bounds.length)} END
    FROM (
      SELECT m.device_name, row_number() OVER (ORDER BY sha256(convert_to(${deploymentId + ':'} || m.device_name, 'UTF8'))) AS rn
      FROM device_group_members m WHERE m.tenant_id = ${tenantId} AND m.group_id = ${groupId} AND ${memberInService}
    ) ranked`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * Fresh planner statistics for deployment_devices, inside the rollout start's transaction (its
 * own new rows are counted, and the statistics become visible with them at COMMIT). The receipt
 * path's statements find a deployment's rows by (deployment_id, device_name); for a deployment
 * the statistics have not seen, the planner estimates a row or two and reads the deployment
 * whole through its deployment_id prefix instead, for every batch of receipts: 0.2-0.4 s per
 * statement while a 100k-device rollout's first receipts arrived, against about 1 ms after this
 * (measured on the fleet bench). Autovacuum would analyze the table too, but only on its next
 * round after the rollout has started, and not at all where it is off. ANALYZE reads a fixed
 * sample (300 x default_statistics_target rows), so its cost does not grow with the table.
 */
export async function analyzeDeploymentDevices(db: Db): Promise<void> {
  await sql`ANALYZE deployment_devices`.execute(db);
}

/** A legacy member rollout of the tenant; `id` must be a UUID. */
export async function legacyRollout(db: Db, tenantId: string, id: string) {
  return db
    .selectFrom('rollouts')
    .select(['id', 'deployment_id'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('kind', '=', 'legacy')
    .executeTakeFirst();
}

/** spec §2.3 rule 6: appended, labelled `device-reported` by the table default. */
export async function insertLegacyReport(
  db: Db,
  r: { tenantId: string; deploymentId: string; rolloutId: string; device: string; status: 'installed' | 'failed'; detail: string | null; now: Date },
): Promise<void> {
  await db
    .insertInto('legacy_status_reports')
    .values({
      tenant_id: r.tenantId,
      deployment_id: r.deploymentId,
      rollout_id: r.rolloutId,
      device_name: r.device,
      status: r.status,
      detail: r.detail,
      reported_at: r.now,
    })
    .execute();
}

export interface DeviceAssignment {
  rollout_id: string;
  kind: RolloutKind;
  // signed-release pointer (spec §2.2, spec §3): the device fetches the envelope through TUF and verifies it itself
  release?: { release_id: string; product: string; version: string; envelope_target: string; envelope_digest: string; payload_digest: string };
  transaction?: { id: string; member_count: number; members: { rollout_id: string; component: string; group: number; position: number }[] };
  // legacy artifact pointer (no release): stays distinguishable everywhere
  legacy?: { artifact_id: string; name: string; version: string; kind: string; target: string; digest: string; length: number };
}

/**
 * Work for a device now: deployments not aborted, whose wave holding the device is open, and
 * for which the device has not yet reported a terminal result. One assignment per deployment;
 * `rollout_id` is the member at position 0, and `transaction` always carries the full member set
 * with group and position (spec §3 rule 3), member_count 1 for one component. The device
 * channel reads the same through `pendingDeploymentIdsOf` (one column of the check-in's single
 * statement) and `deploymentAssignments` (cached per deployment: assignment-pointers.ts).
 */
export async function listAssignments(db: Db, tenantId: string, deviceName: string, now: Date): Promise<DeviceAssignment[]> {
  void now; // assignments depend on stored state only; validity is checked by the device itself
  const { rows } = await sql<{ ids: unknown }>`SELECT ${pendingDeploymentIdsOf(sql`${tenantId}::uuid`, sql`${deviceName}::text`)} AS ids`.execute(db);
  const ids = deploymentIdsFrom(rows[0]?.ids);
  const byId = await deploymentAssignments(db, ids);
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/**
 * The deployments a device has work in now (`listAssignments`' rule), oldest first, as one JSON
 * array column of a larger statement (the check-in's, devices/queries/presence.ts
 * `checkInState`); `deploymentIdsFrom` reads it back. The device state, the wave and the abort
 * are read here on every check-in, never cached.
 */
export function pendingDeploymentIdsOf(tenantId: RawBuilder<unknown>, deviceName: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(SELECT coalesce(json_agg(pd.id ORDER BY pd.created_at, pd.id), '[]'::json)
    FROM deployment_devices pdd
    JOIN deployments pd ON pd.id = pdd.deployment_id
    JOIN deployment_waves pw ON pw.deployment_id = pdd.deployment_id AND pw.idx = pdd.wave_idx
    WHERE pdd.tenant_id = ${tenantId} AND pdd.device_name = ${deviceName} AND pdd.state = 'pending'
      AND pd.aborted_at IS NULL AND pw.state = 'open')`;
}

/** The column `pendingDeploymentIdsOf` made (JSON, parsed by the driver or here). */
export function deploymentIdsFrom(column: unknown): string[] {
  return (typeof column === 'string' ? JSON.parse(column) : (column ?? [])) as string[];
}

/**
 * What a device is told to install for each of these deployments, by deployment id (an id
 * not found is absent). All of it is fixed when the deployment starts: its kind, release or
 * artifact and member count, its member rollouts, and the release's and artifact's pointer
 * fields (a release is immutable; an artifact's mutable fields, description and labels, are not
 * read), so a caller may keep the answer (device-channel's AssignmentPointers).
 */
export async function deploymentAssignments(db: Db, deploymentIds: readonly string[]): Promise<Map<string, DeviceAssignment>> {
  const out = new Map<string, DeviceAssignment>();
  if (deploymentIds.length === 0) return out;
  const ids = [...deploymentIds];
  const deps = await db.selectFrom('deployments').select(['id', 'kind', 'release_id', 'artifact_id', 'member_count']).where('id', 'in', ids).execute();
  if (deps.length === 0) return out;
  const rollouts = await db
    .selectFrom('rollouts')
    .select(['id', 'deployment_id', 'component', 'group_index', 'position'])
    .where('deployment_id', 'in', ids)
    .orderBy('position')
    .execute();
  const releaseIds = deps.map((d) => d.release_id).filter((x): x is string => x !== null);
  const releases = releaseIds.length
    ? await db
        .selectFrom('releases')
        .select(['id', 'product', 'version', 'target', 'envelope_digest', 'payload_digest'])
        .where('id', 'in', releaseIds)
        .execute()
    : [];
  const artifactIds = deps.map((d) => d.artifact_id).filter((x): x is string => x !== null);
  const artifacts = artifactIds.length
    ? await db.selectFrom('artifacts').select(['id', 'name', 'version', 'kind', 'target', 'digest', 'length']).where('id', 'in', artifactIds).execute()
    : [];
  for (const d of deps) {
    const members = rollouts.filter((r) => r.deployment_id === d.id);
    const lead = members[0]!;
    if (d.kind === 'legacy') {
      const a = artifacts.find((x) => x.id === d.artifact_id)!;
      out.set(d.id, {
        rollout_id: lead.id,
        kind: 'legacy' as const,
        legacy: { artifact_id: a.id, name: a.name, version: a.version, kind: a.kind, target: a.target, digest: a.digest, length: Number(a.length) },
      });
      continue;
    }
    const rel = releases.find((x) => x.id === d.release_id)!;
    out.set(d.id, {
      rollout_id: lead.id,
      kind: 'signed' as const,
      release: {
        release_id: rel.id,
        product: rel.product,
        version: rel.version,
        envelope_target: rel.target,
        envelope_digest: rel.envelope_digest,
        payload_digest: rel.payload_digest,
      },
      transaction: {
        id: d.id,
        member_count: d.member_count,
        members: members.map((m) => ({ rollout_id: m.id, component: m.component, group: m.group_index, position: m.position })),
      },
    });
  }
  return out;
}

/**
 * Devices of one deployment by name, row-locked in name order (so two transactions taking
 * overlapping sets never deadlock), with their wave and state as of the lock: names not
 * assigned are absent.
 */
export async function lockDeploymentDevices(
  db: Db,
  deploymentId: string,
  names: readonly string[],
): Promise<Map<string, { wave_idx: number; state: DeviceState }>> {
  if (names.length === 0) return new Map();
  const rows = await db
    .selectFrom('deployment_devices')
    .select(['device_name', 'wave_idx', 'state'])
    .where('deployment_id', '=', deploymentId)
    .where('device_name', 'in', [...names])
    .orderBy('device_name')
    .forUpdate()
    .execute();
  return new Map(rows.map((r) => [r.device_name, { wave_idx: r.wave_idx, state: r.state as DeviceState }]));
}

/**
 * Moves pending devices of one deployment to their terminal state in one statement (their rows
 * locked by `lockDeploymentDevices`); a device that is not pending is left alone and missing
 * from the result.
 */
export async function claimPendingDevices(
  db: Db,
  deploymentId: string,
  claims: readonly { device: string; state: Exclude<DeviceState, 'pending'>; receiptId: string | null }[],
  now: Date,
): Promise<Map<string, number>> {
  if (claims.length === 0) return new Map();
  const values = sql.join(claims.map((c) => sql`(${c.device}::text, ${c.state}::text, ${c.receiptId}::uuid)`));
  const rows = await sql<{ device_name: string; wave_idx: number }>`
    UPDATE deployment_devices AS dd SET state = v.state, receipt_id = v.receipt_id, updated_at = ${now}
    FROM (VALUES ${values}) AS v (device_name, state, receipt_id)
    WHERE dd.deployment_id = ${deploymentId}::uuid AND dd.device_name = v.device_name AND dd.state = 'pending'
    RETURNING dd.device_name, dd.wave_idx`.execute(db);
  return new Map(rows.rows.map((r) => [r.device_name, r.wave_idx]));
}

/**
 * Moves every pending row of one device (across the tenant's deployments) to `skipped`: the
 * rows are locked in deployment order first, as the receipt path locks them (before any
 * deployment row), and a row a receipt settled meanwhile is no longer pending and left alone.
 * Returns the moved rows by deployment, in deployment order.
 */
export async function skipPendingDevice(db: Db, tenantId: string, device: string, now: Date): Promise<{ deployment_id: string; wave_idx: number }[]> {
  const rows = await sql<{ deployment_id: string; wave_idx: number }>`
    WITH locked AS (
      SELECT deployment_id FROM deployment_devices
      WHERE tenant_id = ${tenantId} AND device_name = ${device} AND state = 'pending'
      ORDER BY deployment_id
      FOR UPDATE
    )
    UPDATE deployment_devices AS dd SET state = 'skipped', receipt_id = NULL, updated_at = ${now}
    FROM locked
    WHERE dd.deployment_id = locked.deployment_id AND dd.device_name = ${device} AND dd.state = 'pending'
    RETURNING dd.deployment_id, dd.wave_idx`.execute(db);
  return [...rows.rows].sort((a, b) => (a.deployment_id < b.deployment_id ? -1 : a.deployment_id > b.deployment_id ? 1 : 0));
}

/** The member rollouts of each deployment (ids in activation order) and its kind. */
export async function deploymentRollouts(db: Db, deploymentIds: readonly string[]): Promise<Map<string, { kind: RolloutKind; rollout_ids: string[] }>> {
  const out = new Map<string, { kind: RolloutKind; rollout_ids: string[] }>();
  if (deploymentIds.length === 0) return out;
  const rows = await db
    .selectFrom('rollouts')
    .select(['id', 'deployment_id', 'kind'])
    .where('deployment_id', 'in', [...deploymentIds])
    .orderBy('deployment_id')
    .orderBy('position')
    .execute();
  for (const r of rows) {
    const d = out.get(r.deployment_id) ?? { kind: r.kind, rollout_ids: [] };
    d.rollout_ids.push(r.id);
    out.set(r.deployment_id, d);
  }
  return out;
}

/**
 * Locks the deployment row (taken last and held to COMMIT), then reads its waves and threshold.
 * Two statements on purpose: a read joined into the locking statement would see the waves as
 * of that statement's start, before the writer it waited for committed. FOR NO KEY UPDATE
 * serializes progression writers like FOR UPDATE, but does not wait for the key-share locks
 * that appended receipts hold on the row through their foreign key, so two batches that both
 * appended never deadlock here.
 */
export async function lockDeploymentWaves(db: Db, deploymentId: string): Promise<{ failure_threshold: FailureThreshold | null; waves: WaveRow[] }> {
  const d = await db.selectFrom('deployments').select('failure_threshold').where('id', '=', deploymentId).forNoKeyUpdate().executeTakeFirstOrThrow();
  const waves = (await wavesOf(db, [deploymentId])).get(deploymentId) ?? [];
  return { failure_threshold: d.failure_threshold ?? null, waves };
}

/** Adds terminal results to the deployment's counters and writes the waves that changed, in one statement. */
export async function addDeviceResults(
  db: Db,
  deploymentId: string,
  counts: Readonly<Record<Exclude<DeviceState, 'pending'>, number>>,
  before: readonly WaveRow[],
  after: readonly WaveRow[],
  now: Date,
): Promise<void> {
  const changed = after.filter((w) => {
    const b = before.find((x) => x.index === w.index);
    return !(b && b.state === w.state && b.done === w.done && b.failed === w.failed && b.failures_acknowledged === w.failures_acknowledged);
  });
  const waves =
    changed.length === 0
      ? sql``
      : sql`WITH w AS (
          UPDATE deployment_waves AS dw SET state = v.state, done = v.done, failed = v.failed, failures_acknowledged = v.fa, updated_at = ${now}
          FROM (VALUES ${sql.join(changed.map((w) => sql`(${w.index}::int, ${w.state}::text, ${w.done}::int, ${w.failed}::int, ${w.failures_acknowledged}::int)`))})
            AS v (idx, state, done, failed, fa)
          WHERE dw.deployment_id = ${deploymentId}::uuid AND dw.idx = v.idx
          RETURNING 1
        )`;
  await sql`${waves}
    UPDATE deployments SET
      n_committed = n_committed + ${counts.committed}::int,
      n_rolled_back = n_rolled_back + ${counts['rolled back']}::int,
      n_failed = n_failed + ${counts.failed}::int,
      n_installed = n_installed + ${counts.installed}::int,
      n_skipped = n_skipped + ${counts.skipped}::int
    WHERE id = ${deploymentId}::uuid`.execute(db);
}
