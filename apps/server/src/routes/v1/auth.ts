import { Type } from 'typebox';
import { SESSION_COOKIE } from '../../auth/authenticate.js';
import { permissionsOf } from '../../auth/permissions.js';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute, executeAs } from '../../http/execute.js';
import { ErrorResponses, Strict } from '../../http/schemas.js';
import { checkLogin, endSession, startSession } from '../../resources/sessions/commands.js';
import { MeResponse } from '../../resources/sessions/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

export const DEFAULT_SESSION_TTL_SECONDS = 12 * 3600;

const LoginBody = Strict({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: SERVER_LIMITS.passwordBytes }),
});

/** spec §4, spec §5 rule 1: login issues the session cookie (204), logout revokes it, me answers who. */
export const authRoutes: V1Routes = async (app, { ctx }) => {
  const ttl = ctx.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS;

  app.post(
    '/auth/login',
    {
      config: { permission: 'public', summary: 'Log in; sets the session cookie' },
      schema: { body: LoginBody, response: { 204: Type.Null(), ...ErrorResponses } },
    },
    async (request, reply) => {
      const user = await checkLogin(ctx.store.db, request.body.email, request.body.password);
      const { token } = await executeAs(ctx, request, { tenant: user.tenant_id, actor: user.email, credential: 'session' }, startSession, {
        userId: user.id,
        ttlSeconds: ttl,
      });
      void reply.setCookie(SESSION_COOKIE, token, {
        httpOnly: true,
        sameSite: 'strict',
        // Secure whenever the API is served over TLS (never over plain loopback HTTP, where browsers would drop it).
        secure: request.protocol === 'https',
        path: '/',
        maxAge: ttl,
      });
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/auth/logout',
    { config: { permission: 'profile.read', summary: 'Revoke the current session' }, schema: { response: { 204: Type.Null(), ...ErrorResponses } } },
    async (request, reply) => {
      const p = principalOf(request);
      if (p.sessionId !== null) await execute(ctx, request, endSession, { sessionId: p.sessionId, userId: p.userId });
      void reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/auth/me',
    { config: { permission: 'profile.read', summary: 'Current identity' }, schema: { response: { 200: MeResponse, ...ErrorResponses } } },
    async (request) => {
      const p = principalOf(request);
      return {
        email: p.email,
        role: p.role,
        tenant_id: p.tenantId,
        permissions: [...permissionsOf(p.role)],
        credential: p.kind,
        user_id: p.userId,
      };
    },
  );
};
