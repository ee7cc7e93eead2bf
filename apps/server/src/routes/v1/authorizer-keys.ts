import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { registerAuthorizerKey, revokeAuthorizerKey } from '../../resources/authorizer-keys/commands.js';
import { authorizerKeyCounts, getAuthorizerKey, listAuthorizerKeys } from '../../resources/authorizer-keys/queries.js';
import { authorizerKeyView } from '../../resources/authorizer-keys/views.js';
import { AuthorizerKey } from '../../resources/authorizer-keys/schemas.js';

const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec §4 rule 3 / contracts §6: trusted Ed25519 authorizer keys; revoked keys stay listed. */
export const authorizerKeysRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post(
    '/authorizer-keys',
    {
      config: { permission: 'keys.write', summary: 'Register a trusted Ed25519 authorizer key' },
      schema: {
        body: Strict({ name: Type.String({ minLength: 1, maxLength: 128 }), public_key_pem: Type.String({ minLength: 1, maxLength: 4096 }) }),
        response: { 201: AuthorizerKey, ...ErrorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await execute(ctx, request, registerAuthorizerKey, request.body)),
  );

  app.get(
    '/authorizer-keys',
    {
      config: { permission: 'keys.read', summary: 'List authorizer keys (active and revoked)' },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: { 200: PageOf('authorizer_keys', AuthorizerKey, Type.Object({ active: Type.Integer(), revoked: Type.Integer() })), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'authorizer_keys', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const rows = await listAuthorizerKeys(snap, tenantId, limit, offset);
        const { total, revoked } = await authorizerKeyCounts(snap, tenantId);
        return { items: rows.map(authorizerKeyView), total, counts: { active: total - revoked, revoked } };
      }),
  );

  app.get(
    '/authorizer-keys/:id',
    {
      config: { permission: 'keys.read', summary: 'One authorizer key' },
      schema: { params: IdParams, response: { 200: AuthorizerKey, ...ErrorResponses } },
    },
    async (request) => {
      const k = await getAuthorizerKey(db, principalOf(request).tenantId, request.params.id);
      if (!k) throw notFound(`authorizer key ${request.params.id}`);
      return authorizerKeyView(k);
    },
  );

  // Revocation keeps the record (evidence of what was trusted); both spellings are offered.
  const revoke = (request: FastifyRequest, id: string) => execute(ctx, request, revokeAuthorizerKey, { id });
  app.post(
    '/authorizer-keys/:id/revoke',
    {
      config: { permission: 'keys.write', summary: 'Revoke an authorizer key (kept, marked revoked)' },
      schema: { params: IdParams, response: { 200: AuthorizerKey, ...ErrorResponses } },
    },
    async (request) => revoke(request, request.params.id),
  );
  app.delete(
    '/authorizer-keys/:id',
    {
      config: { permission: 'keys.write', summary: 'Revoke an authorizer key (same as POST /revoke)' },
      schema: { params: IdParams, response: { 200: AuthorizerKey, ...ErrorResponses } },
    },
    async (request) => revoke(request, request.params.id),
  );
};
