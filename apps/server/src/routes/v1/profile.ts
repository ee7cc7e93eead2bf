import { Type } from 'typebox';
import { principalOf, type Principal } from '../../auth/principal.js';
import { missingPermission, notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { sendUpdated, updateResponses } from '../../http/prefer.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { prepareProfilePatch, updateProfile } from '../../resources/users/commands.js';
import { getUser } from '../../resources/users/queries.js';
import { User } from '../../resources/users/schemas.js';
import { userJson } from './users.js';
import { SERVER_LIMITS } from '../../limits.js';

/** A session's user (API keys have no profile). */
function sessionUser(p: Principal): string {
  if (p.userId === null) throw missingPermission('profile.read', 'session credential required');
  return p.userId;
}

/** spec §4: the current user's profile. */
export const profileRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/profile',
    {
      config: { permission: 'profile.read', summary: 'Current user profile' },
      schema: { response: { 200: User, ...ErrorResponses } },
    },
    async (request) => {
      const p = principalOf(request);
      const user = await getUser(db, p.tenantId, sessionUser(p));
      if (!user) throw notFound('user');
      return userJson(user);
    },
  );

  app.patch(
    '/profile',
    {
      config: { permission: 'profile.write', summary: 'Update display name or password (204; 200 with the profile on Prefer: return=representation)' },
      schema: {
        body: Strict({
          display_name: Type.Optional(Type.String({ maxLength: 100 })),
          current_password: Type.Optional(Type.String({ maxLength: SERVER_LIMITS.passwordBytes })),
          new_password: Type.Optional(Type.String({ minLength: 8, maxLength: SERVER_LIMITS.passwordBytes })),
        }),
        response: { ...updateResponses(User), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const p = principalOf(request);
      const patch = await prepareProfilePatch(db, p.tenantId, sessionUser(p), request.body);
      const user = await execute(ctx, request, updateProfile, patch);
      return sendUpdated(request, reply, () => userJson(user));
    },
  );
};
