import { Type } from 'typebox';
import { ROLES } from '../../auth/permissions.js';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { changeUserRole, createUser, prepareNewUser, removeUser } from '../../resources/users/commands.js';
import { listUsers, type UserRecord } from '../../resources/users/queries.js';
import { User, UserCounts, type UserView } from '../../resources/users/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

export function userJson(u: UserRecord): UserView {
  return { id: u.id, email: u.email, display_name: u.display_name, role: u.role as (typeof ROLES)[number], created_at: iso(u.created_at) };
}

/** spec §4, spec §5 rule 3: users are administered in session-only mode (an API key cannot mint users). */
export const usersRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const config = { permission: 'users.manage', sessionOnly: true } as const;

  app.post(
    '/users',
    {
      config: { ...config, summary: 'Create a user' },
      schema: {
        body: Strict({
          email: Type.String({ minLength: 3, maxLength: 320 }),
          password: Type.String({ minLength: 8, maxLength: SERVER_LIMITS.passwordBytes }),
          role: Type.Enum(ROLES),
          display_name: Type.Optional(Type.String({ maxLength: 100 })),
        }),
        response: { 201: User, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const user = await execute(ctx, request, createUser, await prepareNewUser(request.body));
      return reply.code(201).send(userJson(user));
    },
  );

  app.get(
    '/users',
    {
      config: { ...config, summary: 'List users (counts by role)' },
      schema: {
        querystring: Strict(PageQuery),
        response: { 200: PageOf('users', User, UserCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'users', async (snap, { limit, offset }) => {
        const { rows, total, counts } = await listUsers(snap, principalOf(request).tenantId, limit, offset);
        return { items: rows.map(userJson), total, counts };
      }),
  );

  app.delete(
    '/users/:id',
    {
      config: { ...config, summary: 'Delete a user (their sessions go with them)' },
      schema: { params: Strict({ id: Uuid }), response: { 204: Type.Null(), ...ErrorResponses } },
    },
    async (request, reply) => {
      await execute(ctx, request, removeUser, { id: request.params.id, callerUserId: principalOf(request).userId });
      return reply.code(204).send(null);
    },
  );

  app.patch(
    '/users/:id',
    {
      config: {
        ...config,
        summary: "Change a user's role (the last admin of the tenant cannot be demoted: 409); 204, or 200 with Prefer: return=representation",
      },
      schema: { params: Strict({ id: Uuid }), body: Strict({ role: Type.Enum(ROLES) }), response: { ...updateResponses(User), ...ErrorResponses } },
    },
    async (request, reply) => {
      const user = await execute(ctx, request, changeUserRole, { id: request.params.id, role: request.body.role });
      return sendUpdated(request, reply, () => userJson(user));
    },
  );
};
