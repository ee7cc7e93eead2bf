import { SERVER_TUNING } from '../../../limits.js';
import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../store/database.js';
import { PREPARE_MARK } from '../../../store/prepared.js';
import type { Db } from '../../../store/tx.js';
import type { InventoryAttributes } from '../inventory.js';
import { openLogRequestsFrom, openLogRequestsOf, type OpenLogRequest } from '../../log-requests/queries.js';
import { deploymentIdsFrom, pendingDeploymentIdsOf } from '../../rollouts/queries.js';
import { addDeviceHistory, getDeviceByName, DEVICE_COLUMNS, type DeviceRecord } from './identity.js';

/**
 * Whether a device is seen: a check-in reads `checkInState` to tell whether it changes the
 * device, then writes `recordHeartbeat` (status, inventory) or goes through the channel's
 * `last_seen` buffer (`advanceLastSeen`, and `markDevicesOnline` for offline ones); the offline
 * detector runs `markStaleDevicesOffline`, the one query over every tenant.
 */

/** Everything a check-in reads, as of one snapshot. */
export interface CheckInState {
  /** The status (an offline device comes back online with a history entry). */
  status: string;
  /** The stored inventory: a check-in writes at once only when the device reports another. */
  profile: string | null;
  agent_version: string | null;
  /** Its open log requests (log-requests `peekLogRequests`' rows). */
  logRequests: OpenLogRequest[];
  /** The deployments it has work in now, oldest first (rollouts `listAssignments`' rule). */
  deploymentIds: string[];
}

/**
 * The read of a check-in, ONE statement and one round trip: the device's row by primary key,
 * its open log requests and the deployments it has work in, each resource's part written by
 * that resource (`openLogRequestsOf`, `pendingDeploymentIdsOf`). A named prepared statement
 * (PREPARE_MARK): parsed and planned once per connection. Undefined when the device is gone.
 */
export async function checkInState(db: Db, deviceId: string): Promise<CheckInState | undefined> {
  const { rows } = await sql<{
    status: string;
    profile: string | null;
    agent_version: string | null;
    log_requests: unknown;
    deployment_ids: unknown;
  }>`${sql.raw(PREPARE_MARK)} SELECT dv.status, dv.profile, dv.agent_version,
    ${openLogRequestsOf(sql.ref('dv.id'))} AS log_requests,
    ${pendingDeploymentIdsOf(sql.ref('dv.tenant_id'), sql.ref('dv.name'))} AS deployment_ids
    FROM devices dv WHERE dv.id = ${deviceId}`.execute(db);
  const row = rows[0];
  if (row === undefined) return undefined;
  return {
    status: row.status,
    profile: row.profile,
    agent_version: row.agent_version,
    logRequests: openLogRequestsFrom(row.log_requests),
    deploymentIds: deploymentIdsFrom(row.deployment_ids),
  };
}

/**
 * Heartbeats of offline devices, many at once: each comes back `online` with an `online` history
 * entry at its time (the counts and list-version triggers fire once for the statement). Devices
 * no longer offline (online meanwhile, decommissioned) are left alone. Id order, like
 * `advanceLastSeen`. Returns the devices it flipped.
 */
export async function markDevicesOnline(db: Db, seen: readonly { id: string; at: Date }[]): Promise<number> {
  if (seen.length === 0) return 0;
  const sorted = [...seen].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = sorted.map((s) => s.id);
  const ats = sorted.map((s) => s.at.toISOString());
  const r = await sql<{ id: string; tenant_id: string; at: Date }>`
    UPDATE devices d SET status = 'online', updated_at = v.at
    FROM (
      SELECT x.id, x.at FROM devices
      JOIN unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS x(id, at) ON devices.id = x.id
      WHERE devices.status = 'offline'
      ORDER BY x.id
      FOR UPDATE OF devices
    ) AS v
    WHERE d.id = v.id
    RETURNING d.id, d.tenant_id, v.at`.execute(db);
  if (r.rows.length > 0) {
    await db
      .insertInto('device_history')
      .values(r.rows.map((row) => ({ tenant_id: row.tenant_id, device_id: row.id, event: 'online', at: row.at, detail: '{}' })))
      .execute();
  }
  return r.rows.length;
}

/**
 * Many heartbeats in one statement: each device's `last_seen` advances to its time (never
 * back: a later check-in may have been written by another path or process meanwhile).
 * Nothing else changes, so the counts and list-version triggers net to nothing, and the
 * row version is a HOT update (migration 0035). Decommissioned devices are left alone.
 * Rows are taken in id order, so two processes flushing overlapping sets cannot deadlock.
 */
export async function advanceLastSeen(db: Db, seen: readonly { id: string; at: Date }[]): Promise<number> {
  if (seen.length === 0) return 0;
  const sorted = [...seen].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = sorted.map((s) => s.id);
  const ats = sorted.map((s) => s.at.toISOString());
  const r = await sql`
    UPDATE devices d SET last_seen = v.at
    FROM (
      SELECT x.id, x.at FROM devices
      JOIN unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS x(id, at) ON devices.id = x.id
      WHERE devices.status <> 'decommissioned' AND (devices.last_seen IS NULL OR devices.last_seen < x.at)
      ORDER BY x.id
      FOR UPDATE OF devices
    ) AS v
    WHERE d.id = v.id`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * The heartbeat write of a check-in: ONE statement that also returns the status before it (the
 * device channel's authentication is usually answered from its cache and reads no row).
 * Same effect as `markDeviceSeen`: online, `last_seen`, inventory, and an `online` history entry
 * when the device was not online before. A decommissioned device is left alone (the WHERE clause).
 */
export async function recordHeartbeat(
  db: Db,
  peer: { tenantId: string; deviceId: string },
  inventory: { agentVersion?: string; profile?: string; attributes?: InventoryAttributes },
  now: Date,
): Promise<void> {
  const row = await db
    .updateTable('devices')
    // the row as it was, locked first so no other heartbeat's change slips in between
    .from(db.selectFrom('devices').select(['id', 'status']).where('id', '=', peer.deviceId).forUpdate().as('before'))
    .set({
      last_seen: now,
      status: 'online',
      updated_at: now,
      ...(inventory.agentVersion === undefined ? {} : { agent_version: inventory.agentVersion }),
      ...(inventory.profile === undefined ? {} : { profile: inventory.profile }),
      ...(inventory.attributes === undefined ? {} : { inventory: JSON.stringify(inventory.attributes) }),
    })
    .whereRef('devices.id', '=', 'before.id')
    .where('devices.status', '!=', 'decommissioned')
    .returning(['devices.id', 'before.status as was'])
    .executeTakeFirst();
  if (row !== undefined && row.was !== 'online') await addDeviceHistory(db, peer.tenantId, peer.deviceId, 'online', now);
}

/** Heartbeat: last_seen, online (never resurrects a decommissioned device). */
export async function markDeviceSeen(
  db: Kysely<Database>,
  tenantId: string,
  name: string,
  input: { now: Date; agentVersion?: string; profile?: string },
): Promise<DeviceRecord | undefined> {
  const before = await getDeviceByName(db, tenantId, name);
  if (!before || before.status === 'decommissioned') return before;
  const row = await db
    .updateTable('devices')
    .set({
      last_seen: input.now,
      status: 'online',
      updated_at: input.now,
      ...(input.agentVersion === undefined ? {} : { agent_version: input.agentVersion }),
      ...(input.profile === undefined ? {} : { profile: input.profile }),
    })
    .where('id', '=', before.id)
    .where('status', '!=', 'decommissioned')
    .returning(DEVICE_COLUMNS)
    .executeTakeFirst();
  if (row && before.status !== 'online') await addDeviceHistory(db, tenantId, row.id, 'online', input.now);
  return row;
}

export async function markDeviceOffline(db: Kysely<Database>, tenantId: string, name: string, now: Date): Promise<void> {
  const row = await db
    .updateTable('devices')
    .set({ status: 'offline', updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .where('status', '=', 'online')
    .returning(['id'])
    .executeTakeFirst();
  if (row) await addDeviceHistory(db, tenantId, row.id, 'offline', now);
}

/**
 * Offline detector (all tenants): online devices not seen since `before`, flipped in statements
 * of at most `batch` devices (SERVER_TUNING.offlineFlipBatch) until a statement finds fewer. A
 * device whose row a concurrent heartbeat holds is skipped (SKIP LOCKED): it is being seen now.
 * One statement over a whole fleet (a server restarted after its devices' interval, or a
 * fleet enrolled faster than it checks in) held every flipped row's lock until it ended, and
 * the heartbeats of those devices waited behind it. Returns how many devices were flipped.
 */
export async function markStaleDevicesOffline(db: Db, before: Date, batch: number = SERVER_TUNING.offlineFlipBatch): Promise<number> {
  let flipped = 0;
  for (;;) {
    const rows = await db
      .updateTable('devices')
      .set({ status: 'offline', updated_at: before })
      .where('status', '=', 'online')
      .where('id', 'in', (eb) =>
        eb.selectFrom('devices').select('id').where('status', '=', 'online').where('last_seen', '<', before).limit(batch).forUpdate().skipLocked(),
      )
      .returning(['id'])
      .execute();
    flipped += rows.length;
    if (rows.length < batch) return flipped;
  }
}
