import { Type } from 'typebox';
import { ROLES } from '../../auth/permissions.js';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { createApiKey, revokeKey } from '../../resources/api-keys/commands.js';
import { listApiKeys, type ApiKeyRecord } from '../../resources/api-keys/queries.js';
import { ApiKey, ApiKeyCounts, ApiKeyCreated, type ApiKeyView } from '../../resources/api-keys/schemas.js';

function keyJson(k: ApiKeyRecord): ApiKeyView {
  return {
    id: k.id,
    name: k.name,
    role: k.role as (typeof ROLES)[number],
    prefix: k.prefix,
    created_at: iso(k.created_at),
    last_used_at: iso(k.last_used_at),
    revoked_at: iso(k.revoked_at),
  };
}

/** spec §5 rules 2-3, contracts §6: API keys, session-only; plaintext shown once in `key`. */
export const apiKeysRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;
  const config = { permission: 'api-keys.manage', sessionOnly: true } as const;

  app.post(
    '/api-keys',
    {
      config: { ...config, summary: 'Create an API key (plaintext shown once)' },
      schema: {
        body: Strict({ name: Type.String({ minLength: 1, maxLength: 100 }), role: Type.Enum(ROLES) }),
        response: { 201: ApiKeyCreated, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const { key, plaintext } = await execute(ctx, request, createApiKey, {
        name: request.body.name,
        role: request.body.role,
        createdBy: principalOf(request).userId,
      });
      return reply.code(201).send({ ...keyJson(key), key: plaintext });
    },
  );

  app.get(
    '/api-keys',
    {
      config: { ...config, summary: 'List API keys (never the secret; counts active and revoked)' },
      schema: {
        querystring: Strict(PageQuery),
        response: { 200: PageOf('api_keys', ApiKey, ApiKeyCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'api_keys', async (snap, { limit, offset }) => {
        const { rows, total, counts } = await listApiKeys(snap, principalOf(request).tenantId, limit, offset);
        return { items: rows.map(keyJson), total, counts };
      }),
  );

  app.delete(
    '/api-keys/:id',
    {
      config: { ...config, summary: 'Revoke an API key' },
      schema: { params: Strict({ id: Uuid }), response: { 204: Type.Null(), ...ErrorResponses } },
    },
    async (request, reply) => {
      await execute(ctx, request, revokeKey, { id: request.params.id });
      // Other processes hear the database's notification (migration 0009); this one must not
      // answer the next request from its cache before that notification arrives.
      ctx.apiKeyCache?.clear();
      return reply.code(204).send(null);
    },
  );
};
