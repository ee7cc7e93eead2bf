import { targetPolicyDigest, type Digest } from '@svc/release-core';
import type { Db } from '../../store/tx.js';
import { deviceFilterSql } from '../devices/filter/index.js';
import { groupFilter, groupMembers, materializeMembers, setSnapshot } from './queries.js';

/** contracts §2: the group's target-policy digest over its current members (release-core computes it). */
export async function computeSnapshotDigest(db: Db, tenantId: string, groupId: string): Promise<{ digest: Digest; count: number }> {
  const members = await groupMembers(db, tenantId, groupId);
  return { digest: targetPolicyDigest({ tenant: tenantId, group: groupId, members }), count: members.length };
}

/**
 * A dynamic group's members follow the fleet now (docs/publish-and-deploy.md "Dynamic groups"): they are
 * materialized from its filter and the digest over them stored. The caller holds the group
 * row lock. A static group is left as it is. Answers the snapshot and what changed.
 */
export async function refreshGroupSnapshot(
  db: Db,
  tenantId: string,
  groupId: string,
  now: Date,
): Promise<{ digest: Digest; count: number; added: number; removed: number; dynamic: boolean }> {
  const filter = await groupFilter(db, tenantId, groupId);
  if (filter === null || filter === undefined) return { ...(await computeSnapshotDigest(db, tenantId, groupId)), added: 0, removed: 0, dynamic: false };
  const changed = await materializeMembers(db, tenantId, groupId, deviceFilterSql(filter));
  const snap = await computeSnapshotDigest(db, tenantId, groupId);
  await setSnapshot(db, tenantId, groupId, snap, now);
  return { ...snap, ...changed, dynamic: true };
}
