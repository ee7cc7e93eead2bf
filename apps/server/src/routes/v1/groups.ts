import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { addGroupMembers, createGroup, deleteGroup, refreshGroup, removeGroupMembers } from '../../resources/groups/commands.js';
import { groupCounts, listGroups } from '../../resources/groups/queries.js';
import { groupView, groupWithMembers } from '../../resources/groups/views.js';
import { Group, GroupCounts, GroupMembersChanged } from '../../resources/groups/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

const DeviceNames = Type.Array(Type.String({ maxLength: 63 }), { maxItems: SERVER_LIMITS.groupMembersPerCall });
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec §2 Group: members added and removed, snapshot digest kept current on every change; a group not targeted by a running rollout can be deleted. */
export const groupsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post(
    '/groups',
    {
      config: { permission: 'groups.write', summary: 'Create a device group: static (members) or dynamic (filter)' },
      schema: {
        body: Strict({
          name: Type.String({ minLength: 1, maxLength: 64 }),
          members: Type.Optional(DeviceNames),
          filter: Type.Optional(Type.String({ description: 'makes the group dynamic (docs/publish-and-deploy.md "Dynamic groups"); not with members' })),
        }),
        response: { 201: Group, ...ErrorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await execute(ctx, request, createGroup, request.body)),
  );

  app.get(
    '/groups',
    {
      config: { permission: 'groups.read', summary: 'List device groups (members omitted; see GET /groups/{id}); total, counts empty/populated' },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: { 200: PageOf('groups', Group, GroupCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'groups', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const rows = await listGroups(snap, tenantId, limit, offset);
        const { total, empty } = await groupCounts(snap, tenantId);
        // list rows carry no member names (a page of 100k-device groups would be huge)
        return { items: rows.map((g) => groupView(g, [])), total, counts: { empty, populated: total - empty } };
      }),
  );

  app.get(
    '/groups/:id',
    {
      config: { permission: 'groups.read', summary: 'One group with its members and snapshot digest' },
      schema: { params: IdParams, response: { 200: Group, ...ErrorResponses } },
    },
    async (request) => {
      const g = await groupWithMembers(db, principalOf(request).tenantId, request.params.id);
      if (!g) throw notFound(`group ${request.params.id}`);
      return g;
    },
  );

  app.post(
    '/groups/:id/members',
    {
      config: { permission: 'groups.write', summary: 'Add devices to a group (additive); 204, or 200 with Prefer: return=representation' },
      schema: { params: IdParams, body: Strict({ devices: DeviceNames }), response: { ...updateResponses(Group), ...ErrorResponses } },
    },
    async (request, reply) => {
      const { id } = await execute(ctx, request, addGroupMembers, { id: request.params.id, devices: request.body.devices });
      // read after the commit, and only when asked: a group's member names can be many
      return sendUpdated(request, reply, async () => (await groupWithMembers(db, principalOf(request).tenantId, id))!);
    },
  );

  app.post(
    '/groups/:id/members/remove',
    {
      config: {
        permission: 'groups.write',
        summary: 'Remove devices from a group (each must be a member); 204, or 200 with Prefer: return=representation',
      },
      schema: { params: IdParams, body: Strict({ devices: DeviceNames }), response: { ...updateResponses(Group), ...ErrorResponses } },
    },
    async (request, reply) => {
      const { id } = await execute(ctx, request, removeGroupMembers, { id: request.params.id, devices: request.body.devices });
      return sendUpdated(request, reply, async () => (await groupWithMembers(db, principalOf(request).tenantId, id))!);
    },
  );

  app.post(
    '/groups/:id/refresh',
    {
      config: { permission: 'groups.write', summary: 'Refresh a dynamic group: its members become what its filter selects now, with the new snapshot digest' },
      schema: {
        params: IdParams,
        response: {
          200: GroupMembersChanged,
          ...ErrorResponses,
        },
      },
    },
    async (request) => execute(ctx, request, refreshGroup, { id: request.params.id }),
  );

  app.delete(
    '/groups/:id',
    {
      config: { permission: 'groups.write', summary: 'Delete a group; 409 GROUP_IN_USE while a rollout to it runs (past rollouts keep naming it)' },
      schema: { params: IdParams, response: { 204: Type.Null(), ...ErrorResponses } },
    },
    async (request, reply) => {
      await execute(ctx, request, deleteGroup, { id: request.params.id });
      return reply.code(204).send(null);
    },
  );
};
