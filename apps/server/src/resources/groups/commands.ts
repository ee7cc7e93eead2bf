/**
 * Device groups (spec §2): members are added and removed, and every change recomputes the
 * target-policy digest (contracts §2) in its own transaction, so a read never hashes a huge
 * group and a rollout start compares against the value the change committed.
 */
import type { Digest } from '@svc/release-core';
import { invalidInput, notFound, ServerError } from '../../errors/server-error.js';
import { parseFilter } from '../devices/filter/index.js';
import { isUniqueViolation } from '../../store/tx.js';
import type { Command, UnitOfWork } from '../unit-of-work.js';
import {
  deleteMembers,
  existingDeviceNames,
  getGroup,
  groupFilter,
  insertGroup,
  insertMembers,
  lockGroup,
  markGroupDeleted,
  memberNames,
  runningRolloutsOf,
  setSnapshot,
} from './queries.js';
import { computeSnapshotDigest, refreshGroupSnapshot } from './snapshot.js';
import type { GroupView } from './schemas.js';
import { groupWithMembers } from './views.js';
import { SERVER_LIMITS } from '../../limits.js';

export const GROUP_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/;

function checkDeviceList(devices: unknown, field: string): string[] {
  if (!Array.isArray(devices)) throw new ServerError('GROUP_INVALID', `${field}: must be an array of device names`);
  if (devices.length > SERVER_LIMITS.groupMembersPerCall)
    throw new ServerError('GROUP_INVALID', `${field}: at most ${SERVER_LIMITS.groupMembersPerCall} devices per call`);
  devices.forEach((d, i) => {
    if (typeof d !== 'string') throw new ServerError('GROUP_INVALID', `${field}[${i}]: must be a device name`);
  });
  return [...new Set(devices as string[])];
}

/** Adds the devices and stores the new digest; every name must be a device of this tenant. */
async function addMembers(uow: UnitOfWork, groupId: string, devices: string[], field: string): Promise<{ digest: Digest; count: number }> {
  const known = await existingDeviceNames(uow.trx, uow.tenant, devices);
  const unknown = devices.filter((d) => !known.has(d));
  if (unknown.length > 0) {
    const shown = unknown
      .slice(0, 5)
      .map((d) => JSON.stringify(d))
      .join(', ');
    throw new ServerError('GROUP_INVALID', `${field}: unknown device ${shown}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}`);
  }
  await insertMembers(uow.trx, uow.tenant, groupId, devices);
  const snapshot = await computeSnapshotDigest(uow.trx, uow.tenant, groupId);
  await setSnapshot(uow.trx, uow.tenant, groupId, snapshot, uow.now);
  return snapshot;
}

/**
 * POST /groups: the group, its first members and their digest. With `filter` the group is
 * dynamic (docs/publish-and-deploy.md "Dynamic groups"): its members are what the filter selects, now
 * and at every refresh and rollout start; it takes no explicit members.
 */
export const createGroup: Command<{ name: unknown; members?: unknown; filter?: unknown }, GroupView> = async (uow, body) => {
  if (typeof body.name !== 'string' || !GROUP_NAME_RE.test(body.name)) {
    throw new ServerError('GROUP_INVALID', `name: must match ${GROUP_NAME_RE.source}`);
  }
  const name = body.name;
  const filter = body.filter === undefined ? null : body.filter;
  if (filter !== null) {
    if (typeof filter !== 'string') throw invalidInput('filter', 'must be a device filter (docs/device-filter.md)');
    if (body.members !== undefined) throw new ServerError('GROUP_INVALID', "members: a dynamic group's members follow its filter; send one or the other");
    parseFilter(filter); // refuses naming filter and the column
  }
  const members = body.members === undefined ? [] : checkDeviceList(body.members, 'members');
  let id: string;
  try {
    id = await insertGroup(uow.trx, uow.tenant, name, uow.now, filter);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('GROUP_EXISTS', `name: a group named ${JSON.stringify(name)} already exists`);
    throw e;
  }
  if (filter === null) await addMembers(uow, id, members, 'members');
  else await refreshGroupSnapshot(uow.trx, uow.tenant, id, uow.now);
  const g = (await groupWithMembers(uow.trx, uow.tenant, id))!;
  await uow.audit({
    action: 'group.create',
    target: `group:${g.id}`,
    detail: { name: g.name, members: g.member_count, snapshot_digest: g.snapshot_digest, ...(filter === null ? {} : { filter }) },
  });
  return g;
};

/** The group locked, refused when it is dynamic: its members follow its filter, never a call. */
async function lockStaticGroup(uow: UnitOfWork, id: string): Promise<{ id: string }> {
  const g = await lockGroup(uow.trx, uow.tenant, id);
  if (!g) throw notFound(`group ${id}`);
  if ((await groupFilter(uow.trx, uow.tenant, g.id)) !== null) {
    throw new ServerError('GROUP_INVALID', `id: group ${g.id} is dynamic: its members follow its filter (POST /groups/{id}/refresh)`);
  }
  return g;
}

/**
 * POST /groups/{id}/refresh: a dynamic group's members become what its filter selects now, and
 * the digest over them is stored (what a customer signs a release against). Audited with the
 * digests before and after; a static group is refused.
 */
export const refreshGroup: Command<{ id: string }, { id: string; snapshot_digest: string; added: number; removed: number }> = async (uow, { id }) => {
  const g = await lockGroup(uow.trx, uow.tenant, id);
  if (!g) throw notFound(`group ${id}`);
  const before = (await getGroup(uow.trx, uow.tenant, g.id))!;
  if (before.filter === null) throw new ServerError('GROUP_INVALID', `id: group ${g.id} is static: its members change only by request`);
  const snap = await refreshGroupSnapshot(uow.trx, uow.tenant, g.id, uow.now);
  await uow.audit({
    action: 'group.refresh',
    target: `group:${g.id}`,
    detail: { added: snap.added, removed: snap.removed, members: snap.count, before: before.snapshot_digest, snapshot_digest: snap.digest },
  });
  return { id: g.id, snapshot_digest: snap.digest, added: snap.added, removed: snap.removed };
};

/** POST /groups/{id}/members: additive; answers the group's id and new digest (`added` counts the names sent). */
export const addGroupMembers: Command<{ id: string; devices: unknown }, { id: string; snapshot_digest: string }> = async (uow, { id, devices: input }) => {
  const devices = checkDeviceList(input, 'devices');
  const g = await lockStaticGroup(uow, id);
  const snapshot = await addMembers(uow, g.id, devices, 'devices');
  await uow.audit({ action: 'group.members.add', target: `group:${g.id}`, detail: { added: (input as unknown[]).length, snapshot_digest: snapshot.digest } });
  return { id: g.id, snapshot_digest: snapshot.digest };
};

/**
 * POST /groups/{id}/members/remove: every name must be a member (a typo is refused, naming it,
 * rather than silently ignored); answers the group's id and new digest.
 */
export const removeGroupMembers: Command<{ id: string; devices: unknown }, { id: string; snapshot_digest: string }> = async (uow, { id, devices: input }) => {
  const devices = checkDeviceList(input, 'devices');
  const g = await lockStaticGroup(uow, id);
  const members = await memberNames(uow.trx, uow.tenant, g.id, devices);
  const strangers = devices.filter((d) => !members.has(d));
  if (strangers.length > 0) {
    const shown = strangers
      .slice(0, 5)
      .map((d) => JSON.stringify(d))
      .join(', ');
    throw new ServerError('GROUP_INVALID', `devices: not a member ${shown}${strangers.length > 5 ? ` and ${strangers.length - 5} more` : ''}`);
  }
  await deleteMembers(uow.trx, uow.tenant, g.id, devices);
  const snapshot = await computeSnapshotDigest(uow.trx, uow.tenant, g.id);
  await setSnapshot(uow.trx, uow.tenant, g.id, snapshot, uow.now);
  await uow.audit({ action: 'group.members.remove', target: `group:${g.id}`, detail: { removed: devices.length, snapshot_digest: snapshot.digest } });
  return { id: g.id, snapshot_digest: snapshot.digest };
};

/** Running rollouts named in the refusal of a group delete (the first few; the count is exact enough for a message). */
const ROLLOUTS_NAMED = 5;

/**
 * DELETE /groups/{id}: refused while a rollout to the group runs (GROUP_IN_USE names it). The
 * row lock is the one a rollout start takes, so a start and a delete never both succeed.
 */
export const deleteGroup: Command<{ id: string }, void> = async (uow, { id }) => {
  const g = await lockGroup(uow.trx, uow.tenant, id);
  if (!g) throw notFound(`group ${id}`);
  const running = await runningRolloutsOf(uow.trx, uow.tenant, g.id, ROLLOUTS_NAMED + 1);
  if (running.length > 0) {
    const shown = running.slice(0, ROLLOUTS_NAMED).join(', ');
    throw new ServerError(
      'GROUP_IN_USE',
      `id: group ${g.id} is the target of running rollout ${shown}${running.length > ROLLOUTS_NAMED ? ' and more' : ''}; abort or finish it first`,
    );
  }
  const before = (await getGroup(uow.trx, uow.tenant, g.id))!;
  await markGroupDeleted(uow.trx, uow.tenant, g.id, uow.now);
  await uow.audit({ action: 'group.delete', target: `group:${g.id}`, detail: { name: before.name, members: before.member_count } });
};
