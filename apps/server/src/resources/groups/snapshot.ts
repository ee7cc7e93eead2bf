import { targetPolicyDigest } from '@svc/release-core';
import type { Db } from '../../store/tx.js';
import { groupMembers } from './queries.js';

/** contracts §2: the group's target-policy digest over its current members (release-core computes it). */
export async function computeSnapshotDigest(db: Db, tenantId: string, groupId: string): Promise<{ digest: string; count: number }> {
  const members = await groupMembers(db, tenantId, groupId);
  return { digest: targetPolicyDigest({ tenant: tenantId, group: groupId, members }), count: members.length };
}
