import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { hashPassword, MAX_PASSWORD_BYTES } from '../../auth/password.js';
import { ROLES } from '../../auth/permissions.js';
import { principalOf } from '../../auth/principal.js';
import { EMAIL } from '../../config.js';
import { invalidInput, notFound, ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, iso, PageQuery, Strict, Timestamp, Uuid } from '../../http/schemas.js';
import { deleteUser, insertUser, isUniqueViolation, listUsers, type UserRecord } from '../../store/users.js';

export const User = Type.Object({ id: Uuid, email: Type.String(), display_name: Type.String(), role: Type.Enum(ROLES), created_at: Timestamp });

export function userJson(u: UserRecord) {
  return { id: u.id, email: u.email, display_name: u.display_name, role: u.role as (typeof ROLES)[number], created_at: iso(u.created_at) };
}

/** spec 2 + 4: users are administered in session-only mode (an API key cannot mint users). */
export const usersRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const config = { permission: 'users.manage', sessionOnly: true } as const;

  app.post('/users', {
    config: { ...config, summary: 'Create a user' },
    schema: {
      body: Strict({
        email: Type.String({ minLength: 3, maxLength: 320 }),
        password: Type.String({ minLength: 8, maxLength: MAX_PASSWORD_BYTES }),
        role: Type.Enum(ROLES),
        display_name: Type.Optional(Type.String({ maxLength: 100 })),
      }),
      response: { 201: User, ...ErrorResponses },
    },
  }, async (request, reply) => {
    const p = principalOf(request);
    const body = request.body;
    if (!EMAIL.test(body.email)) throw invalidInput('email', 'not an email address');
    const passwordHash = await hashPassword(body.password);
    try {
      const user = await db.transaction().execute(async (tx) => {
        const u = await insertUser(tx, { tenantId: p.tenantId, email: body.email, displayName: body.display_name ?? '', role: body.role, passwordHash });
        await audit(tx, request, { action: 'user.create', target: `user:${u.id}`, detail: { email: u.email, role: u.role } });
        return u;
      });
      return reply.code(201).send(userJson(user));
    } catch (error) {
      if (isUniqueViolation(error)) throw new ServerError('CONFLICT', 'email: a user with this email already exists');
      throw error;
    }
  });

  app.get('/users', {
    config: { ...config, summary: 'List users' },
    schema: { querystring: Strict(PageQuery), response: { 200: Type.Object({ users: Type.Array(User), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }), ...ErrorResponses } },
  }, async (request) => {
    const p = principalOf(request);
    const { limit, offset } = page(request.query);
    const { rows, total } = await listUsers(db, p.tenantId, limit, offset);
    return { users: rows.map(userJson), total, limit, offset };
  });

  app.delete('/users/:id', {
    config: { ...config, summary: 'Delete a user (their sessions go with them)' },
    schema: { params: Strict({ id: Uuid }), response: { 204: Type.Null(), ...ErrorResponses } },
  }, async (request, reply) => {
    const p = principalOf(request);
    if (request.params.id === p.userId) throw new ServerError('CONFLICT', 'id: you cannot delete yourself');
    await db.transaction().execute(async (tx) => {
      const u = await deleteUser(tx, p.tenantId, request.params.id);
      if (!u) throw notFound(`user ${request.params.id}`);
      await audit(tx, request, { action: 'user.delete', target: `user:${u.id}`, detail: { email: u.email } });
    });
    return reply.code(204).send(null);
  });
};
