import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, iso, PageOf, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { createEnrollToken, removeEnrollToken } from '../../resources/enroll-tokens/commands.js';
import { enrollTokenStatus, listEnrollTokens, type EnrollTokenRecord } from '../../resources/enroll-tokens/queries.js';
import { EnrollToken, EnrollTokenCounts, EnrollTokenCreated, type EnrollTokenView } from '../../resources/enroll-tokens/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';

function tokenJson(t: EnrollTokenRecord, now: Date): EnrollTokenView {
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    max_uses: t.max_uses,
    uses: t.uses,
    expires_at: iso(t.expires_at),
    created_at: iso(t.created_at),
    created_by: t.created_by,
    status: enrollTokenStatus(t, now),
  };
}

/** spec §4: enrollment tokens; the secret is shown once, only its hash is stored. */
export const enrollTokensRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post(
    '/enroll-tokens',
    {
      config: { permission: 'enroll-tokens.write', summary: 'Create an enrollment token (secret shown once)' },
      schema: {
        body: Strict({
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          max_uses: Type.Optional(Type.Integer({ minimum: 1, maximum: SERVER_LIMITS.enrollTokenUses })),
          ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: SERVER_LIMITS.enrollTokenTtlSeconds })),
          expires_at: Type.Optional(Type.String({ format: 'date-time' })),
        }),
        response: { 201: EnrollTokenCreated, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const { token, plaintext } = await execute(ctx, request, createEnrollToken, request.body);
      return reply.code(201).send({ ...tokenJson(token, ctx.now()), token: plaintext });
    },
  );

  app.get(
    '/enroll-tokens',
    {
      config: { permission: 'enroll-tokens.read', summary: 'List enrollment tokens (never the secret; counts active, expired, exhausted)' },
      schema: {
        querystring: Strict(PageQuery),
        response: { 200: PageOf('enroll_tokens', EnrollToken, EnrollTokenCounts), ...ErrorResponses },
      },
    },
    async (request) =>
      listPage(db, request.query, 'enroll_tokens', async (snap, { limit, offset }) => {
        const now = ctx.now();
        const { rows, total, counts } = await listEnrollTokens(snap, principalOf(request).tenantId, now, limit, offset);
        // each row's status at the same instant as the counts, so the two always agree
        return { items: rows.map((t) => tokenJson(t, now)), total, counts };
      }),
  );

  app.delete(
    '/enroll-tokens/:id',
    {
      config: { permission: 'enroll-tokens.write', summary: 'Delete an enrollment token' },
      schema: { params: Strict({ id: Uuid }), response: { 204: Type.Null(), ...ErrorResponses } },
    },
    async (request, reply) => {
      await execute(ctx, request, removeEnrollToken, { id: request.params.id });
      return reply.code(204).send(null);
    },
  );
};
