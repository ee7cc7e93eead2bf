/**
 * Device groups and their membership table. The target-policy digest (contracts §2) and the
 * member count are stored on the group row, written in the same transaction as every
 * membership change. Every function is tenant-scoped.
 */
import { normalizeUuid, type Digest } from '@svc/release-core';
import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { DeviceGroupsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';

export type GroupRow = Selectable<DeviceGroupsTable>;

/** Sorted member names of a group (the snapshot the digest covers); the first `limit` when given. */
export async function groupMembers(db: Db, tenantId: string, groupId: string, limit?: number): Promise<string[]> {
  let query = db
    .selectFrom('device_group_members')
    .select('device_name')
    .where('tenant_id', '=', tenantId)
    .where('group_id', '=', groupId)
    .orderBy(sql`device_name COLLATE "C"`);
  if (limit !== undefined) query = query.limit(limit);
  const rows = await query.execute();
  return rows.map((r) => r.device_name);
}

/** Inserts an empty group (digest written by the caller once its members are in); unique violation on a taken name. */
export async function insertGroup(db: Db, tenantId: string, name: string, now: Date, filter: string | null = null): Promise<string> {
  const row = await db
    .insertInto('device_groups')
    .values({ tenant_id: tenantId, name, snapshot_digest: 'sha256:pending', created_at: now, updated_at: now, filter })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Locks the group row (a concurrent rollout start reads the digest under the same lock); undefined when absent. */
export async function lockGroup(db: Db, tenantId: string, groupId: string): Promise<{ id: string } | undefined> {
  const uuid = normalizeUuid(groupId);
  if (uuid === undefined) return undefined;
  return db
    .selectFrom('device_groups')
    .select('id')
    .where('id', '=', uuid)
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Share-locks the rows of every group `device` belongs to, in id order. A rollout start holds
 * its group row locked while it counts the members in service and assigns them, so a change of
 * a member's status that takes this lock first waits for that start to commit (and then sees
 * its rows), or makes the start wait and count without it.
 */
export async function shareLockGroupsOf(db: Db, tenantId: string, device: string): Promise<void> {
  await db
    .selectFrom('device_groups')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', (eb) => eb.selectFrom('device_group_members').select('group_id').where('tenant_id', '=', tenantId).where('device_name', '=', device))
    .orderBy('id')
    .forShare()
    .execute();
}

/** The names among `names` that are devices of the tenant. */
export async function existingDeviceNames(db: Db, tenantId: string, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await db.selectFrom('devices').select('name').where('tenant_id', '=', tenantId).where('name', 'in', names).execute();
  return new Set(rows.map((r) => r.name));
}

/** Adds members (already a member: unchanged). */
export async function insertMembers(db: Db, tenantId: string, groupId: string, devices: string[]): Promise<void> {
  if (devices.length === 0) return;
  await db
    .insertInto('device_group_members')
    .values(devices.map((d) => ({ group_id: groupId, tenant_id: tenantId, device_name: d })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Removes members; answers the names that were members (the others were not). */
export async function deleteMembers(db: Db, tenantId: string, groupId: string, devices: string[]): Promise<Set<string>> {
  if (devices.length === 0) return new Set();
  const rows = await db
    .deleteFrom('device_group_members')
    .where('tenant_id', '=', tenantId)
    .where('group_id', '=', groupId)
    .where('device_name', 'in', devices)
    .returning('device_name')
    .execute();
  return new Set(rows.map((r) => r.device_name));
}

/** The names among `devices` that are members of the group. */
export async function memberNames(db: Db, tenantId: string, groupId: string, devices: string[]): Promise<Set<string>> {
  if (devices.length === 0) return new Set();
  const rows = await db
    .selectFrom('device_group_members')
    .select('device_name')
    .where('tenant_id', '=', tenantId)
    .where('group_id', '=', groupId)
    .where('device_name', 'in', devices)
    .execute();
  return new Set(rows.map((r) => r.device_name));
}

/**
 * Rollouts of deployments to the group that still run (not aborted, a wave not done: the
 * `running`, `paused` and `awaiting_approval` statuses of resources/rollouts/states.ts), first
 * created first; at most `limit`.
 */
export async function runningRolloutsOf(db: Db, tenantId: string, groupId: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('rollouts as r')
    .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
    .select('r.id')
    .where('d.tenant_id', '=', tenantId)
    .where('d.group_id', '=', groupId)
    .where('d.aborted_at', 'is', null)
    .where((eb) => eb.exists(eb.selectFrom('deployment_waves as w').select('w.idx').whereRef('w.deployment_id', '=', 'd.id').where('w.state', '<>', 'done')))
    .orderBy('r.created_at')
    .orderBy('r.position')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Marks the (locked) group deleted and removes its members; the row stays for the deployments naming it. */
export async function markGroupDeleted(db: Db, tenantId: string, groupId: string, now: Date): Promise<void> {
  await db.deleteFrom('device_group_members').where('tenant_id', '=', tenantId).where('group_id', '=', groupId).execute();
  await db.updateTable('device_groups').set({ deleted_at: now, updated_at: now }).where('tenant_id', '=', tenantId).where('id', '=', groupId).execute();
}

export async function setSnapshot(db: Db, tenantId: string, groupId: string, snapshot: { digest: Digest; count: number }, now: Date): Promise<void> {
  await db
    .updateTable('device_groups')
    .set({ snapshot_digest: snapshot.digest, member_count: snapshot.count, updated_at: now })
    .where('id', '=', groupId)
    .where('tenant_id', '=', tenantId)
    .execute();
}

export async function getGroup(db: Db, tenantId: string, groupId: string): Promise<GroupRow | undefined> {
  const uuid = normalizeUuid(groupId);
  if (uuid === undefined) return undefined;
  return db.selectFrom('device_groups').selectAll().where('id', '=', uuid).where('tenant_id', '=', tenantId).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function listGroups(db: Db, tenantId: string, limit: number, offset: number): Promise<GroupRow[]> {
  return db
    .selectFrom('device_groups')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** spec §8: the tenant's groups, how many, and how many have no member yet. */
export async function groupCounts(db: Db, tenantId: string): Promise<{ total: number; empty: number }> {
  const r = await db
    .selectFrom('device_groups')
    .select((eb) => [eb.fn.countAll<string>().as('total'), eb.fn.count<string>(eb.case().when('member_count', '=', 0).then(1).end()).as('empty')])
    .where('tenant_id', '=', tenantId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return { total: Number(r.total), empty: Number(r.empty) };
}

/** A live group's filter: null for a static group, undefined when there is no such group. */
export async function groupFilter(db: Db, tenantId: string, groupId: string): Promise<string | null | undefined> {
  const row = await db.selectFrom('device_groups').select('filter').where('tenant_id', '=', tenantId).where('id', '=', groupId).executeTakeFirst();
  return row === undefined ? undefined : row.filter;
}

/**
 * A dynamic group's members become the tenant's devices its filter selects now: the members it
 * no longer selects are removed, the new ones added (one statement each; the group row is
 * locked by the caller). Answers how many were added and removed.
 */
export async function materializeMembers(db: Db, tenantId: string, groupId: string, where: RawBuilder<unknown>): Promise<{ added: number; removed: number }> {
  const removed = await sql`
    DELETE FROM device_group_members m
    WHERE m.tenant_id = ${tenantId} AND m.group_id = ${groupId}
      AND NOT EXISTS (SELECT 1 FROM devices WHERE devices.tenant_id = ${tenantId} AND devices.name = m.device_name AND ${where})`.execute(db);
  const added = await sql`
    INSERT INTO device_group_members (group_id, tenant_id, device_name)
    SELECT ${groupId}::uuid, ${tenantId}::uuid, devices.name FROM devices WHERE devices.tenant_id = ${tenantId} AND ${where}
    ON CONFLICT DO NOTHING`.execute(db);
  return { added: Number(added.numAffectedRows ?? 0), removed: Number(removed.numAffectedRows ?? 0) };
}
