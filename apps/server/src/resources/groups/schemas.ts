/**
 * The JSON shapes of groups, declared once: the routes answer with them (the OpenAPI document,
 * the serializer) and the view types are derived from them (`Static<typeof X>`).
 */
import { Type, type Static } from 'typebox';
import { Uuid } from '../../http/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

export const Group = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    filter: Type.Union([Type.String(), Type.Null()], {
      description:
        "a dynamic group's device filter (docs/device-filter.md): its members follow the fleet, frozen at each rollout start; null for a static group",
    }),
    members: Type.Array(Type.String(), {
      description: `device names (capped at ${SERVER_LIMITS.groupMembersShown} in a response, none in the list; member_count is exact)`,
    }),
    member_count: Type.Integer(),
    snapshot_digest: Type.String({ description: 'contracts 2 target-policy digest of the current membership' }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
);
export type GroupView = Static<typeof Group>;

export const GroupCounts = Type.Object({
  empty: Type.Integer({ description: 'groups without members' }),
  populated: Type.Integer({ description: 'groups with at least one member' }),
});

/** A membership change: the members added or removed and the new snapshot digest. */
export const GroupMembersChanged = Type.Object({ id: Uuid, snapshot_digest: Type.String(), added: Type.Integer(), removed: Type.Integer() });
