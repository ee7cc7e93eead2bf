import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { hashPassword, MAX_PASSWORD_BYTES, verifyPassword } from '../../auth/password.js';
import { principalOf } from '../../auth/principal.js';
import { invalidInput, missingPermission, notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { findUserForLogin, getUser, updateUser } from '../../store/users.js';
import { User, userJson } from './users.js';

/** spec 4: the current user's profile (a session's user; API keys have no profile). */
export const profileRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  async function currentUser(request: Parameters<typeof principalOf>[0]) {
    const p = principalOf(request);
    if (p.userId === null) throw missingPermission('profile.read', 'session credential required');
    const u = await getUser(db, p.tenantId, p.userId);
    if (!u) throw notFound('user');
    return u;
  }

  app.get('/profile', {
    config: { permission: 'profile.read', summary: 'Current user profile' },
    schema: { response: { 200: User, ...ErrorResponses } },
  }, async (request) => userJson(await currentUser(request)));

  app.patch('/profile', {
    config: { permission: 'profile.write', summary: 'Update display name or password' },
    schema: {
      body: Strict({
        display_name: Type.Optional(Type.String({ maxLength: 100 })),
        current_password: Type.Optional(Type.String({ maxLength: MAX_PASSWORD_BYTES })),
        new_password: Type.Optional(Type.String({ minLength: 8, maxLength: MAX_PASSWORD_BYTES })),
      }),
      response: { 200: User, ...ErrorResponses },
    },
  }, async (request) => {
    const user = await currentUser(request);
    const body = request.body;
    const patch: { display_name?: string; password_hash?: string } = {};
    if (body.display_name !== undefined) patch.display_name = body.display_name;
    if (body.new_password !== undefined) {
      // A stolen session alone must not be enough to take over the account.
      const withHash = await findUserForLogin(db, user.email);
      if (body.current_password === undefined || !withHash || !(await verifyPassword(body.current_password, withHash.password_hash))) {
        throw invalidInput('current_password', 'required and must match to set new_password');
      }
      patch.password_hash = await hashPassword(body.new_password);
    }
    if (Object.keys(patch).length === 0) throw invalidInput('body', 'nothing to update (display_name or new_password)');
    const updated = await db.transaction().execute(async (tx) => {
      const u = await updateUser(tx, user.tenant_id, user.id, patch);
      await audit(tx, request, { action: 'profile.update', target: `user:${user.id}`, detail: { fields: Object.keys(patch).map((k) => (k === 'password_hash' ? 'password' : k)) } });
      return u;
    });
    if (!updated) throw notFound('user');
    return userJson(updated);
  });
};
