/**
 * Device groups: membership in a table, the target-policy digest (contracts 2) stored on the
 * group row and recomputed in the same transaction as every membership change, so a read never
 * hashes a huge group and a rollout start compares against the value the change committed.
 */
import { targetPolicyDigest } from '@svc/release-core';
import { sql } from 'kysely';
import { inTransaction, isUniqueViolation, type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import { ServerError } from '../errors/server-error.js';

export const GROUP_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/;
export const MAX_MEMBERS_PER_CALL = 10_000;

export interface GroupView {
  id: string;
  name: string;
  members: string[];
  member_count: number;
  snapshot_digest: string;
  created_at: string;
  updated_at: string;
}

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

/** contracts 2: sha256 over JCS({tenant, group, members}) - release-core computes it. */
export async function computeSnapshotDigest(db: Db, tenantId: string, groupId: string): Promise<{ digest: string; count: number }> {
  const members = await groupMembers(db, tenantId, groupId);
  return { digest: targetPolicyDigest({ tenant: tenantId, group: groupId, members }), count: members.length };
}

function checkDeviceList(devices: unknown, field: string): string[] {
  if (!Array.isArray(devices)) throw new ServerError('GROUP_INVALID', `${field}: must be an array of device names`);
  if (devices.length > MAX_MEMBERS_PER_CALL) throw new ServerError('GROUP_INVALID', `${field}: at most ${MAX_MEMBERS_PER_CALL} devices per call`);
  devices.forEach((d, i) => {
    if (typeof d !== 'string') throw new ServerError('GROUP_INVALID', `${field}[${i}]: must be a device name`);
  });
  return [...new Set(devices as string[])];
}

/** spec 2 Group: additive membership; every name must be a device of this tenant. */
async function addMembersIn(db: Db, tenantId: string, groupId: string, devices: string[], field: string): Promise<void> {
  if (devices.length === 0) return;
  const known = await db.selectFrom('devices').select('name').where('tenant_id', '=', tenantId).where('name', 'in', devices).execute();
  const knownSet = new Set(known.map((r) => r.name));
  const unknown = devices.filter((d) => !knownSet.has(d));
  if (unknown.length > 0) {
    const shown = unknown.slice(0, 5).map((d) => JSON.stringify(d)).join(', ');
    throw new ServerError('GROUP_INVALID', `${field}: unknown device ${shown}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}`);
  }
  await db
    .insertInto('device_group_members')
    .values(devices.map((d) => ({ group_id: groupId, tenant_id: tenantId, device_name: d })))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

async function refreshDigest(db: Db, tenantId: string, groupId: string, now: Date): Promise<void> {
  const { digest, count } = await computeSnapshotDigest(db, tenantId, groupId);
  await db
    .updateTable('device_groups')
    .set({ snapshot_digest: digest, member_count: count, updated_at: now })
    .where('id', '=', groupId)
    .where('tenant_id', '=', tenantId)
    .execute();
}

export async function createGroup(db: Db, tenantId: string, body: { name: unknown; members?: unknown }, now: Date): Promise<GroupView> {
  if (typeof body.name !== 'string' || !GROUP_NAME_RE.test(body.name)) {
    throw new ServerError('GROUP_INVALID', `name: must match ${GROUP_NAME_RE.source}`);
  }
  const name = body.name;
  const members = body.members === undefined ? [] : checkDeviceList(body.members, 'members');
  const id = await inTransaction(db, async (trx) => {
    let row: { id: string };
    try {
      row = await trx
        .insertInto('device_groups')
        .values({ tenant_id: tenantId, name, snapshot_digest: 'sha256:pending', created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
    } catch (e) {
      if (isUniqueViolation(e)) throw new ServerError('GROUP_EXISTS', `name: a group named ${JSON.stringify(name)} already exists`);
      throw e;
    }
    await addMembersIn(trx, tenantId, row.id, members, 'members');
    await refreshDigest(trx, tenantId, row.id, now);
    return row.id;
  });
  return (await getGroup(db, tenantId, id))!;
}

export async function addGroupMembers(db: Db, tenantId: string, groupId: string, body: { devices: unknown }, now: Date): Promise<GroupView> {
  const devices = checkDeviceList(body.devices, 'devices');
  await inTransaction(db, async (trx) => {
    // lock the group row: a concurrent rollout start reads the digest under the same lock
    const g = isUuid(groupId)
      ? await trx.selectFrom('device_groups').select('id').where('id', '=', groupId).where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst()
      : undefined;
    if (!g) throw new ServerError('NOT_FOUND', `group ${groupId} not found`);
    await addMembersIn(trx, tenantId, groupId, devices, 'devices');
    await refreshDigest(trx, tenantId, groupId, now);
  });
  return (await getGroup(db, tenantId, groupId))!;
}

/** The group with its members; `members` is capped for huge groups (`member_count` is exact). */
export async function getGroup(db: Db, tenantId: string, groupId: string, memberLimit = 10_000): Promise<GroupView | undefined> {
  if (!isUuid(groupId)) return undefined;
  const g = await db.selectFrom('device_groups').selectAll().where('id', '=', groupId).where('tenant_id', '=', tenantId).executeTakeFirst();
  if (!g) return undefined;
  return view(g, await groupMembers(db, tenantId, groupId, memberLimit));
}

export async function listGroups(db: Db, tenantId: string, limit: number, offset: number): Promise<{ groups: GroupView[]; total: number }> {
  const rows = await db
    .selectFrom('device_groups')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .offset(offset)
    .execute();
  const total = await db.selectFrom('device_groups').select((eb) => eb.fn.countAll<string>().as('n')).where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
  // list rows carry no member names (a list of 100k-device groups would be huge): fetch one group for them
  return { groups: rows.map((g) => view(g, [])), total: Number(total.n) };
}

function view(g: { id: string; name: string; member_count: number; snapshot_digest: string; created_at: Date; updated_at: Date }, members: string[]): GroupView {
  return {
    id: g.id,
    name: g.name,
    members,
    member_count: g.member_count,
    snapshot_digest: g.snapshot_digest,
    created_at: g.created_at.toISOString(),
    updated_at: g.updated_at.toISOString(),
  };
}
