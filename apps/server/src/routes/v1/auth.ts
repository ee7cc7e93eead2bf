import { Type } from 'typebox';
import { audit, recordAuditEvent } from '../../audit/record.js';
import { SESSION_COOKIE } from '../../auth/authenticate.js';
import { DUMMY_HASH_PROMISE, MAX_PASSWORD_BYTES, verifyPassword } from '../../auth/password.js';
import { PERMISSIONS, ROLES, isRole, permissionsOf } from '../../auth/permissions.js';
import { principalOf } from '../../auth/principal.js';
import { newSecret } from '../../auth/secrets.js';
import { ServerError } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { ErrorResponses, Strict, Uuid } from '../../http/schemas.js';
import { createSession, revokeSession } from '../../store/sessions.js';
import { findUserForLogin } from '../../store/users.js';

export const DEFAULT_SESSION_TTL_SECONDS = 12 * 3600;

const LoginBody = Strict({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_BYTES }),
});

export const MeResponse = Type.Object({
  email: Type.Union([Type.String(), Type.Null()]),
  role: Type.Enum(ROLES),
  tenant_id: Uuid,
  permissions: Type.Array(Type.Enum(PERMISSIONS)),
  credential: Type.Union([Type.Literal('session'), Type.Literal('api-key')]),
  user_id: Type.Union([Uuid, Type.Null()]),
});

/** spec 4 + 5.1: login issues the session cookie (204), logout revokes it, me answers who. */
export const authRoutes: V1Routes = async (app, { ctx }) => {
  const ttl = ctx.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS;

  app.post('/auth/login', { config: { permission: 'public', summary: 'Log in; sets the session cookie' }, schema: { body: LoginBody, response: { 204: Type.Null(), ...ErrorResponses } } }, async (request, reply) => {
    const { email, password } = request.body;
    const user = await findUserForLogin(ctx.store.db, email);
    // Same scrypt work for unknown emails, so timing does not reveal which emails exist.
    const ok = await verifyPassword(password, user?.password_hash ?? (await DUMMY_HASH_PROMISE));
    if (!user || !ok || !isRole(user.role)) throw new ServerError('INVALID_CREDENTIALS', 'email or password is incorrect');
    const token = newSecret('svcs');
    const now = ctx.now();
    await createSession(ctx.store.db, { tenantId: user.tenant_id, userId: user.id, tokenHash: token.hash, expiresAt: new Date(now.getTime() + ttl * 1000) });
    await recordAuditEvent(ctx.store.db, { tenantId: user.tenant_id, actor: user.email, credential: 'session', action: 'session.login', target: `user:${user.id}`, requestId: request.id });
    void reply.setCookie(SESSION_COOKIE, token.plaintext, {
      httpOnly: true,
      sameSite: 'strict',
      // Secure whenever the API is served over TLS (never over plain loopback HTTP, where browsers would drop it).
      secure: request.protocol === 'https',
      path: '/',
      maxAge: ttl,
    });
    return reply.code(204).send(null);
  });

  app.post('/auth/logout', { config: { permission: 'profile.read', summary: 'Revoke the current session' }, schema: { response: { 204: Type.Null(), ...ErrorResponses } } }, async (request, reply) => {
    const p = principalOf(request);
    if (p.sessionId !== null) {
      await revokeSession(ctx.store.db, p.sessionId, ctx.now());
      await audit(ctx.store.db, request, { action: 'session.logout', target: `user:${p.userId}` });
    }
    void reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.code(204).send(null);
  });

  app.get('/auth/me', { config: { permission: 'profile.read', summary: 'Current identity' }, schema: { response: { 200: MeResponse, ...ErrorResponses } } }, async (request) => {
    const p = principalOf(request);
    return {
      email: p.email,
      role: p.role,
      tenant_id: p.tenantId,
      permissions: [...permissionsOf(p.role)],
      credential: p.kind,
      user_id: p.userId,
    };
  });
};
