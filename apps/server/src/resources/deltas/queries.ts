/**
 * Delta updates of file and container members (docs/delta-updates.md): the deltas wanted and built, which
 * rollouts asked for them, and what devices report about how bytes reached them. The only
 * file that speaks SQL for them.
 */
import type { Digest } from '@svc/release-core';
import { sql, type Insertable, type Selectable } from 'kysely';
import type { MemberDeltasTable, ReceiptDeliveriesTable } from '../../store/delta-tables.js';
import type { Db } from '../../store/tx.js';

export type DeltaRow = Selectable<MemberDeltasTable>;

/** A member version devices of a group run, with how many of them run it. */
export interface SourceVersion {
  digest: Digest;
  length: number;
  devices: number;
}

/**
 * The versions of `component` the group's devices are known to run, other than `target`,
 * most common first, at most `limit`: what their accepted receipts say runs
 * (vuln_device_software) and what their inventory reports as installed. Only versions the
 * tenant holds as an artifact count: the server must have the source bytes to make a delta.
 */
export async function sourceVersions(
  db: Db,
  args: { tenant: string; groupId: string; component: string; target: Digest; limit: number },
): Promise<SourceVersion[]> {
  // the digests are artifacts' (the join), so a device-reported text that names none is dropped
  const { rows } = await sql<{ digest: Digest; length: string | number; devices: string | number }>`
    WITH running AS (
      SELECT s.device_name, s.digest FROM vuln_device_software s
      WHERE s.tenant_id = ${args.tenant} AND s.component = ${args.component}
      UNION
      SELECT d.name, m->>'digest' FROM devices d,
        jsonb_array_elements(CASE WHEN jsonb_typeof(d.inventory->'members') = 'array' THEN d.inventory->'members' ELSE '[]'::jsonb END) m
      WHERE d.tenant_id = ${args.tenant} AND m->>'component' = ${args.component}
    )
    SELECT r.digest, max(a.length) AS length, count(DISTINCT r.device_name) AS devices
    FROM running r
    JOIN device_group_members gm ON gm.tenant_id = ${args.tenant} AND gm.group_id = ${args.groupId} AND gm.device_name = r.device_name
    JOIN artifacts a ON a.tenant_id = ${args.tenant} AND a.digest = r.digest
    WHERE r.digest <> ${args.target}
    GROUP BY r.digest
    ORDER BY count(DISTINCT r.device_name) DESC, r.digest
    LIMIT ${args.limit}`.execute(db);
  return rows.map((r) => ({ digest: r.digest, length: Number(r.length), devices: Number(r.devices) }));
}

/**
 * The delta row from `source` to `target`, created `queued` when none exists yet (a delta is
 * built once per pair and reused by every rollout that needs it), touched when it exists.
 */
export async function ensureDelta(
  db: Db,
  args: { tenant: string; source: Digest; target: Digest; sourceLength: number; targetLength: number; now: Date },
): Promise<{ id: string; state: DeltaRow['state'] }> {
  return (
    db
      .insertInto('member_deltas')
      .values({
        tenant_id: args.tenant,
        source_digest: args.source,
        target_digest: args.target,
        source_length: args.sourceLength,
        target_length: args.targetLength,
        created_at: args.now,
        updated_at: args.now,
      })
      // an existing row is touched (and locked to this commit): the collector keeps a delta a
      // rollout start reuses (deleteUnusedDeltas)
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'target_digest', 'source_digest']).doUpdateSet({ updated_at: sql`greatest(member_deltas.updated_at, excluded.updated_at)` }),
      )
      .returning(['id', 'state'])
      .executeTakeFirstOrThrow()
  );
}

export async function linkDeploymentDelta(
  db: Db,
  args: { deploymentId: string; deltaId: string; tenant: string; component: string; devices: number },
): Promise<void> {
  await db
    .insertInto('deployment_deltas')
    .values({ deployment_id: args.deploymentId, delta_id: args.deltaId, tenant_id: args.tenant, component: args.component, devices: args.devices })
    .onConflict((oc) => oc.columns(['deployment_id', 'delta_id']).doNothing())
    .execute();
}

/**
 * Leases the oldest delta to build: a queued one, or one whose builder stopped renewing its
 * lease while it had attempts left. Several server processes share the queue.
 */
export async function leaseDelta(db: Db, args: { owner: string; now: Date; until: Date; maxAttempts: number }): Promise<DeltaRow | undefined> {
  const r = await sql<DeltaRow>`
    UPDATE member_deltas SET state = 'building', lease_owner = ${args.owner}, lease_until = ${args.until}::timestamptz,
      attempts = attempts + 1, updated_at = ${args.now}::timestamptz
    WHERE id = (
      SELECT d.id FROM member_deltas d
      WHERE (d.state = 'queued' OR (d.state = 'building' AND d.lease_until < ${args.now}::timestamptz)) AND d.attempts < ${args.maxAttempts}
      ORDER BY d.created_at, d.id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *`.execute(db);
  return r.rows[0];
}

/** Builds whose builder died on their last attempt: failed, with the reason. */
export async function failExhaustedDeltas(db: Db, args: { now: Date; maxAttempts: number }): Promise<number> {
  const r = await db
    .updateTable('member_deltas')
    .set({ state: 'failed', error: `no build finished in ${args.maxAttempts} attempts`, lease_owner: null, lease_until: null, updated_at: args.now })
    .where('state', '=', 'building')
    .where('lease_until', '<', args.now)
    .where('attempts', '>=', args.maxAttempts)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Extends the lease of a build in progress; false when it is no longer this owner's. */
export async function renewDeltaLease(db: Db, args: { id: string; owner: string; until: Date }): Promise<boolean> {
  const r = await db
    .updateTable('member_deltas')
    .set({ lease_until: args.until })
    .where('id', '=', args.id)
    .where('lease_owner', '=', args.owner)
    .where('state', '=', 'building')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Ends a build this owner holds: ready (published), skipped or failed. False when the lease was lost. */
export async function finishDelta(
  db: Db,
  args: {
    id: string;
    owner: string;
    now: Date;
    state: 'ready' | 'skipped' | 'failed';
    targetPath?: string;
    deltaDigest?: Digest;
    deltaLength?: number;
    buildMs?: number;
    peakRssBytes?: number | null;
    error?: string;
  },
): Promise<boolean> {
  const r = await db
    .updateTable('member_deltas')
    .set({
      state: args.state,
      target_path: args.targetPath ?? null,
      delta_digest: args.deltaDigest ?? null,
      delta_length: args.deltaLength ?? null,
      build_ms: args.buildMs ?? null,
      build_peak_rss_bytes: args.peakRssBytes ?? null,
      error: args.error ?? null,
      lease_owner: null,
      lease_until: null,
      updated_at: args.now,
    })
    .where('id', '=', args.id)
    .where('lease_owner', '=', args.owner)
    .where('state', '=', 'building')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** A rollout's deltas: each pair it asked for, for which component and how many devices, and how far it got. */
export async function deploymentDeltas(db: Db, tenant: string, deploymentId: string) {
  return db
    .selectFrom('deployment_deltas as dd')
    .innerJoin('member_deltas as d', 'd.id', 'dd.delta_id')
    .select([
      'dd.component',
      'dd.devices',
      'd.id',
      'd.source_digest',
      'd.target_digest',
      'd.target_length',
      'd.state',
      'd.target_path',
      'd.delta_digest',
      'd.delta_length',
      'd.build_ms',
      'd.error',
    ])
    .where('dd.tenant_id', '=', tenant)
    .where('dd.deployment_id', '=', deploymentId)
    .orderBy('dd.component')
    .orderBy('dd.devices', 'desc')
    .orderBy('d.source_digest')
    .execute();
}

/** One reported member delivery, as stored. */
export type DeliveryRow = Required<Omit<Insertable<ReceiptDeliveriesTable>, 'receipt_id' | 'tenant_id' | 'deployment_id' | 'device_name' | 'reported_at'>>;

/** Stores a receipt's delivery report once (a re-upload of the same receipt changes nothing). */
export async function insertDeliveries(
  db: Db,
  args: { tenant: string; receiptId: string; deploymentId: string; deviceName: string; now: Date; members: readonly DeliveryRow[] },
): Promise<void> {
  if (args.members.length === 0) return;
  await db
    .insertInto('receipt_deliveries')
    .values(
      args.members.map((m) => ({
        receipt_id: args.receiptId,
        tenant_id: args.tenant,
        deployment_id: args.deploymentId,
        device_name: args.deviceName,
        component: m.component,
        method: m.method,
        bytes_transferred: m.bytes_transferred,
        full_length: m.full_length,
        source_digest: m.source_digest,
        fallback: m.fallback,
        attempts: m.attempts,
        resumes: m.resumes,
        failure: m.failure,
        failure_detail: m.failure_detail,
        reported_at: args.now,
      })),
    )
    .onConflict((oc) => oc.columns(['receipt_id', 'component']).doNothing())
    .execute();
}

/** The receipt's deployment and device, to file its delivery report under. */
export async function receiptOwner(db: Db, tenant: string, receiptId: string): Promise<{ deployment_id: string; device_name: string } | undefined> {
  return db
    .selectFrom('release_receipts')
    .select(['deployment_id', 'device_name'])
    .where('tenant_id', '=', tenant)
    .where('id', '=', receiptId)
    .executeTakeFirst();
}

/** The delivery report stored beside a receipt, by component. */
export async function deliveriesOfReceipt(db: Db, tenant: string, receiptId: string): Promise<DeliveryRow[]> {
  const rows = await db
    .selectFrom('receipt_deliveries')
    .select(['component', 'method', 'bytes_transferred', 'full_length', 'source_digest', 'fallback', 'attempts', 'resumes', 'failure', 'failure_detail'])
    .where('tenant_id', '=', tenant)
    .where('receipt_id', '=', receiptId)
    .orderBy('component')
    .execute();
  return rows.map((r) => ({ ...r, bytes_transferred: Number(r.bytes_transferred), full_length: Number(r.full_length) }));
}

/** A rollout's delivery totals: per method, the members delivered, bytes transferred and their full size. */
export async function deploymentDeliveryTotals(db: Db, tenant: string, deploymentId: string) {
  const rows = await db
    .selectFrom('receipt_deliveries')
    .select((eb) => [
      'method',
      eb.fn.countAll<string>().as('members'),
      eb.fn.sum<string>('bytes_transferred').as('bytes_transferred'),
      eb.fn.sum<string>('full_length').as('full_length'),
      eb.fn.count<string>('fallback').as('fallbacks'),
    ])
    .where('tenant_id', '=', tenant)
    .where('deployment_id', '=', deploymentId)
    .groupBy('method')
    .orderBy('method')
    .execute();
  return rows.map((r) => ({
    method: r.method,
    members: Number(r.members),
    bytes_transferred: Number(r.bytes_transferred),
    full_length: Number(r.full_length),
    fallbacks: Number(r.fallbacks),
  }));
}

/** The components of a deployment's member rollouts. */
export async function deploymentComponents(db: Db, tenant: string, deploymentId: string): Promise<string[]> {
  const rows = await db.selectFrom('rollouts').select('component').where('tenant_id', '=', tenant).where('deployment_id', '=', deploymentId).execute();
  return rows.map((r) => r.component);
}

/** One page of a deployment's reported deliveries, by device then component, and how many there are. */
export async function deploymentDeliveries(db: Db, tenant: string, deploymentId: string, limit: number, offset: number) {
  const [rows, total] = await Promise.all([
    db
      .selectFrom('receipt_deliveries')
      .select([
        'device_name',
        'receipt_id',
        'component',
        'method',
        'bytes_transferred',
        'full_length',
        'source_digest',
        'fallback',
        'attempts',
        'resumes',
        'failure',
        'failure_detail',
        'reported_at',
      ])
      .where('tenant_id', '=', tenant)
      .where('deployment_id', '=', deploymentId)
      .orderBy('device_name')
      .orderBy('component')
      .limit(limit)
      .offset(offset)
      .execute(),
    db
      .selectFrom('receipt_deliveries')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('tenant_id', '=', tenant)
      .where('deployment_id', '=', deploymentId)
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** The os-bundle a rollout installs, when `device` may stream it now. */
export interface StreamableBundle {
  deployment_id: string;
  target: string;
  digest: string;
  length: number;
}

/**
 * The bundle of rollout `rolloutId` when it is an os-bundle member assigned to the device right
 * now: the device is pending in the rollout's deployment, the deployment is not aborted and the
 * wave holding the device is open (the same rule as `listAssignments`). Anything else is
 * undefined: the bundle port answers 404 and never says which part failed.
 */
export async function streamableBundle(db: Db, tenant: string, device: string, rolloutId: string): Promise<StreamableBundle | undefined> {
  const row = await db
    .selectFrom('rollouts as r')
    .innerJoin('artifacts as a', 'a.id', 'r.artifact_id')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .innerJoin('deployment_devices as dd', (j) => j.onRef('dd.deployment_id', '=', 'r.deployment_id'))
    .innerJoin('deployment_waves as w', (j) => j.onRef('w.deployment_id', '=', 'dd.deployment_id').onRef('w.idx', '=', 'dd.wave_idx'))
    .select(['r.deployment_id', 'a.target', 'a.digest', 'a.length'])
    .where('r.id', '=', rolloutId)
    .where('r.tenant_id', '=', tenant)
    .where('a.kind', '=', 'os-bundle')
    .where('dd.tenant_id', '=', tenant)
    .where('dd.device_name', '=', device)
    .where('dd.state', '=', 'pending')
    .where('d.aborted_at', 'is', null)
    .where('w.state', '=', 'open')
    .executeTakeFirst();
  return row === undefined ? undefined : { deployment_id: row.deployment_id, target: row.target, digest: row.digest, length: Number(row.length) };
}

/**
 * Adds bytes of a response to what the bundle port sent `device` for `rolloutId`; `request`
 * says whether they start a response (whole file or a range) or continue one counted before.
 */
export async function addBundleBytes(
  db: Db,
  args: { tenant: string; deploymentId: string; rolloutId: string; device: string; bytes: number; request: 'whole' | 'range' | 'continued'; now: Date },
): Promise<void> {
  await db
    .insertInto('bundle_streams')
    .values({
      rollout_id: args.rolloutId,
      device_name: args.device,
      tenant_id: args.tenant,
      deployment_id: args.deploymentId,
      bytes_sent: args.bytes,
      requests: args.request === 'continued' ? 0 : 1,
      ranged_requests: args.request === 'range' ? 1 : 0,
      first_at: args.now,
      last_at: args.now,
    })
    .onConflict((oc) =>
      oc.columns(['rollout_id', 'device_name']).doUpdateSet({
        bytes_sent: sql`bundle_streams.bytes_sent + ${args.bytes}`,
        requests: sql`bundle_streams.requests + ${args.request === 'continued' ? 0 : 1}`,
        ranged_requests: sql`bundle_streams.ranged_requests + ${args.request === 'range' ? 1 : 0}`,
        last_at: args.now,
      }),
    )
    .execute();
}

/** What the bundle port sent per device for a deployment's os-bundle members: one page, and how many there are. */
export async function deploymentBundleStreams(db: Db, tenant: string, deploymentId: string, limit: number, offset: number) {
  const base = db.selectFrom('bundle_streams as s').where('s.tenant_id', '=', tenant).where('s.deployment_id', '=', deploymentId);
  const [rows, count] = await Promise.all([
    base
      .innerJoin('rollouts as r', 'r.id', 's.rollout_id')
      .select(['r.component', 's.device_name', 's.bytes_sent', 's.requests', 's.ranged_requests', 's.first_at', 's.last_at'])
      .orderBy('r.component')
      .orderBy('s.device_name')
      .limit(limit)
      .offset(offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows.map((r) => ({ ...r, bytes_sent: Number(r.bytes_sent) })), total: Number(count.n) };
}

/** Bytes the bundle port sent `device` for `rolloutId` so far (0 when none). */
export async function bundleBytesSent(db: Db, tenant: string, device: string, rolloutId: string): Promise<number> {
  const row = await db
    .selectFrom('bundle_streams')
    .select('bytes_sent')
    .where('tenant_id', '=', tenant)
    .where('rollout_id', '=', rolloutId)
    .where('device_name', '=', device)
    .executeTakeFirst();
  return row === undefined ? 0 : Number(row.bytes_sent);
}

/**
 * True for a delta row `d` that a running deployment of its tenant could still use: one not
 * aborted, with devices that owe a result, installing the delta's target member (the same
 * running rule as the transaction views). Legacy rollouts count too: their devices use a delta
 * that exists for their pair.
 */
const inUse = sql`EXISTS (
  SELECT 1 FROM rollouts r
  JOIN artifacts a ON a.id = r.artifact_id
  JOIN deployments dp ON dp.id = r.deployment_id
  WHERE r.tenant_id = d.tenant_id AND a.tenant_id = d.tenant_id AND a.digest = d.target_digest
    AND dp.aborted_at IS NULL
    AND dp.device_count > dp.n_committed + dp.n_rolled_back + dp.n_failed + dp.n_installed + dp.n_skipped)`;

/** A settled delta no running deployment uses, as the collector considers it. */
export type UnusedDelta = Pick<DeltaRow, 'id' | 'tenant_id' | 'source_digest' | 'target_digest' | 'target_path' | 'updated_at'> & {
  state: 'ready' | 'skipped' | 'failed';
};

/**
 * Settled deltas (ready, skipped, failed: no build holds them) that no running deployment
 * could use, least recently touched first, at most `limit`, after `after` (keyset paging over
 * (updated_at, id)).
 */
export async function unusedDeltas(db: Db, args: { limit: number; after?: { updatedAt: Date; id: string } }): Promise<UnusedDelta[]> {
  const after = args.after ? sql`AND (d.updated_at, d.id) > (${args.after.updatedAt}::timestamptz, ${args.after.id}::uuid)` : sql``;
  const { rows } = await sql<UnusedDelta>`
    SELECT d.id, d.tenant_id, d.source_digest, d.target_digest, d.state, d.target_path, d.updated_at FROM member_deltas d
    WHERE d.state IN ('ready', 'skipped', 'failed') AND NOT ${inUse} ${after}
    ORDER BY d.updated_at, d.id LIMIT ${args.limit}`.execute(db);
  return rows.map((r) => ({ ...r, updated_at: new Date(r.updated_at) }));
}

/**
 * Deletes the tenant's delta rows `ids` that are still settled, still unused by any running
 * deployment and not touched since `notAfter` (a rollout start that reuses a delta touches it),
 * with the links of the rollouts that once asked for them. Locks the rows first: a rollout start
 * reusing one meanwhile either touched it first (and it stays) or waits and makes a new row.
 * Answers the rows deleted.
 */
export async function deleteUnusedDeltas(
  db: Db,
  args: { tenant: string; rows: readonly { id: string; notAfter: Date }[] },
): Promise<{ id: string; source_digest: string; target_digest: string; state: string; target_path: string | null; delta_digest: string | null }[]> {
  if (args.rows.length === 0) return [];
  const values = sql.join(args.rows.map((r) => sql`(${r.id}::uuid, ${r.notAfter}::timestamptz)`));
  const { rows: locked } = await sql<{ id: string }>`
    SELECT d.id FROM member_deltas d JOIN (VALUES ${values}) AS v (id, not_after) ON v.id = d.id
    WHERE d.tenant_id = ${args.tenant} AND d.state IN ('ready', 'skipped', 'failed') AND d.updated_at <= v.not_after AND NOT ${inUse}
    ORDER BY d.id FOR UPDATE OF d`.execute(db);
  const ids = locked.map((r) => r.id);
  if (ids.length === 0) return [];
  await db.deleteFrom('deployment_deltas').where('tenant_id', '=', args.tenant).where('delta_id', 'in', ids).execute();
  return db
    .deleteFrom('member_deltas')
    .where('tenant_id', '=', args.tenant)
    .where('id', 'in', ids)
    .returning(['id', 'source_digest', 'target_digest', 'state', 'target_path', 'delta_digest'])
    .execute();
}

/**
 * A device's last reported delivery of each member it was sent (newest receipt per component):
 * how the bytes arrived, how many crossed the link against the member's full size, and the
 * rollout it came with.
 */
export async function deviceLastDeliveries(db: Db, tenant: string, device: string) {
  const rows = await db
    .selectFrom('receipt_deliveries as rd')
    .leftJoin('rollouts as r', (j) =>
      j.onRef('r.tenant_id', '=', 'rd.tenant_id').onRef('r.deployment_id', '=', 'rd.deployment_id').onRef('r.component', '=', 'rd.component'),
    )
    .distinctOn('rd.component')
    .select([
      'rd.component',
      'rd.method',
      'rd.bytes_transferred',
      'rd.full_length',
      'rd.source_digest',
      'rd.fallback',
      'rd.attempts',
      'rd.resumes',
      'rd.failure',
      'rd.receipt_id',
      'rd.deployment_id',
      'r.id as rollout_id',
      'rd.reported_at',
    ])
    .where('rd.tenant_id', '=', tenant)
    .where('rd.device_name', '=', device)
    .orderBy('rd.component')
    .orderBy('rd.reported_at', 'desc')
    .orderBy('rd.receipt_id')
    .execute();
  return rows.map((r) => ({
    ...r,
    bytes_transferred: Number(r.bytes_transferred),
    full_length: Number(r.full_length),
    reported_at: new Date(r.reported_at),
  }));
}
