import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { addGroupMembers, createGroup, getGroup, listGroups, MAX_MEMBERS_PER_CALL } from '../../pipeline/groups.js';

const Group = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    members: Type.Array(Type.String(), { description: 'device names (capped at 10000 in a response; member_count is exact)' }),
    member_count: Type.Integer(),
    snapshot_digest: Type.String({ description: 'contracts 2 target-policy digest of the current membership' }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
);
const DeviceNames = Type.Array(Type.String({ maxLength: 63 }), { maxItems: MAX_MEMBERS_PER_CALL });
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec 2 Group: membership added additively, snapshot digest kept current on every change. */
export const groupsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post('/groups', {
    config: { permission: 'groups.write', summary: 'Create a device group' },
    schema: { body: Strict({ name: Type.String({ minLength: 1, maxLength: 64 }), members: Type.Optional(DeviceNames) }), response: { 201: Group, ...ErrorResponses } },
  }, async (request, reply) => {
    const g = await createGroup(db, principalOf(request).tenantId, request.body, ctx.now());
    await audit(db, request, { action: 'group.create', target: `group:${g.id}`, detail: { name: g.name, members: g.member_count, snapshot_digest: g.snapshot_digest } });
    return reply.code(201).send(g);
  });

  app.get('/groups', {
    config: { permission: 'groups.read', summary: 'List device groups (members omitted; see GET /groups/{id})' },
    schema: { querystring: Strict({ ...PageQuery }), response: { 200: Type.Object({ groups: Type.Array(Group), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(), counts: Type.Object({ groups: Type.Integer() }) }), ...ErrorResponses } },
  }, async (request) => {
    const { limit, offset } = page(request.query);
    const r = await listGroups(db, principalOf(request).tenantId, limit, offset);
    return { groups: r.groups, total: r.total, limit, offset, counts: { groups: r.total } };
  });

  app.get('/groups/:id', {
    config: { permission: 'groups.read', summary: 'One group with its members and snapshot digest' },
    schema: { params: IdParams, response: { 200: Group, ...ErrorResponses } },
  }, async (request) => {
    const g = await getGroup(db, principalOf(request).tenantId, request.params.id);
    if (!g) throw notFound(`group ${request.params.id}`);
    return g;
  });

  app.post('/groups/:id/members', {
    config: { permission: 'groups.write', summary: 'Add devices to a group (additive)' },
    schema: { params: IdParams, body: Strict({ devices: DeviceNames }), response: { 200: Group, ...ErrorResponses } },
  }, async (request) => {
    const g = await addGroupMembers(db, principalOf(request).tenantId, request.params.id, request.body, ctx.now());
    await audit(db, request, { action: 'group.members.add', target: `group:${g.id}`, detail: { added: request.body.devices.length, snapshot_digest: g.snapshot_digest } });
    return g;
  });
};
