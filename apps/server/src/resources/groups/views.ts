/** A group row as the API shows it (schemas.ts `Group`). */
import type { Db } from '../../store/tx.js';
import { getGroup, groupMembers, type GroupRow } from './queries.js';
import type { GroupView } from './schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

/** `members` is what the caller read (capped, or none in lists); `member_count` is exact. */
export function groupView(g: GroupRow, members: string[]): GroupView {
  return {
    id: g.id,
    name: g.name,
    filter: g.filter,
    members,
    member_count: g.member_count,
    snapshot_digest: g.snapshot_digest,
    created_at: g.created_at.toISOString(),
    updated_at: g.updated_at.toISOString(),
  };
}

/** One group with its members (the first SERVER_LIMITS.groupMembersShown), or undefined. */
export async function groupWithMembers(db: Db, tenantId: string, groupId: string): Promise<GroupView | undefined> {
  const g = await getGroup(db, tenantId, groupId);
  return g ? groupView(g, await groupMembers(db, tenantId, g.id, SERVER_LIMITS.groupMembersShown)) : undefined;
}
