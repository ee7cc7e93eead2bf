import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import { newSecret } from '../../auth/secrets.js';
import { invalidInput, notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, iso, PageQuery, Strict, Timestamp, Uuid } from '../../http/schemas.js';
import { deleteEnrollToken, insertEnrollToken, listEnrollTokens, type EnrollTokenRecord } from '../../store/enroll-tokens.js';

/** Bounds on what an operator may ask for: a token is a bearer secret, keep it short-lived. */
export const MAX_TOKEN_TTL_SECONDS = 90 * 24 * 3600;
export const DEFAULT_TOKEN_TTL_SECONDS = 24 * 3600;
export const MAX_TOKEN_USES = 100_000;

const EnrollToken = Type.Object({
  id: Uuid,
  name: Type.String(),
  prefix: Type.String(),
  max_uses: Type.Integer(),
  uses: Type.Integer(),
  expires_at: Timestamp,
  created_at: Timestamp,
  created_by: Type.Union([Type.String(), Type.Null()]),
});

function tokenJson(t: EnrollTokenRecord) {
  return { id: t.id, name: t.name, prefix: t.prefix, max_uses: t.max_uses, uses: t.uses, expires_at: iso(t.expires_at), created_at: iso(t.created_at), created_by: t.created_by };
}

/** spec 4: enrollment tokens; the secret is shown once, only its hash is stored. */
export const enrollTokensRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post('/enroll-tokens', {
    config: { permission: 'enroll-tokens.write', summary: 'Create an enrollment token (secret shown once)' },
    schema: {
      body: Strict({
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        max_uses: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOKEN_USES })),
        ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: MAX_TOKEN_TTL_SECONDS })),
        expires_at: Type.Optional(Type.String({ format: 'date-time' })),
      }),
      response: { 201: Type.Intersect([EnrollToken, Type.Object({ token: Type.String() })]), ...ErrorResponses },
    },
  }, async (request, reply) => {
    const p = principalOf(request);
    const now = ctx.now();
    const body = request.body;
    if (body.ttl_seconds !== undefined && body.expires_at !== undefined) throw invalidInput('expires_at', 'give expires_at or ttl_seconds, not both');
    let expiresAt = new Date(now.getTime() + (body.ttl_seconds ?? DEFAULT_TOKEN_TTL_SECONDS) * 1000);
    if (body.expires_at !== undefined) {
      expiresAt = new Date(body.expires_at);
      if (Number.isNaN(expiresAt.getTime()) || expiresAt <= now) throw invalidInput('expires_at', 'must be a future RFC 3339 time');
      if (expiresAt.getTime() - now.getTime() > MAX_TOKEN_TTL_SECONDS * 1000) throw invalidInput('expires_at', 'must be within 90 days');
    }
    const secret = newSecret('svce');
    const row = await db.transaction().execute(async (tx) => {
      const r = await insertEnrollToken(tx, { tenantId: p.tenantId, name: body.name ?? 'enrollment token', prefix: secret.prefix, secretHash: secret.hash, maxUses: body.max_uses ?? 1, expiresAt, createdBy: p.actor });
      await audit(tx, request, { action: 'enroll-token.create', target: `enroll-token:${r.id}`, detail: { max_uses: r.max_uses, expires_at: iso(r.expires_at) } });
      return r;
    });
    return reply.code(201).send({ ...tokenJson(row), token: secret.plaintext });
  });

  app.get('/enroll-tokens', {
    config: { permission: 'enroll-tokens.read', summary: 'List enrollment tokens (never the secret)' },
    schema: { querystring: Strict(PageQuery), response: { 200: Type.Object({ enroll_tokens: Type.Array(EnrollToken), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }), ...ErrorResponses } },
  }, async (request) => {
    const p = principalOf(request);
    const { limit, offset } = page(request.query);
    const { rows, total } = await listEnrollTokens(db, p.tenantId, limit, offset);
    return { enroll_tokens: rows.map(tokenJson), total, limit, offset };
  });

  app.delete('/enroll-tokens/:id', {
    config: { permission: 'enroll-tokens.write', summary: 'Delete an enrollment token' },
    schema: { params: Strict({ id: Uuid }), response: { 204: Type.Null(), ...ErrorResponses } },
  }, async (request, reply) => {
    const p = principalOf(request);
    await db.transaction().execute(async (tx) => {
      const r = await deleteEnrollToken(tx, p.tenantId, request.params.id);
      if (!r) throw notFound(`enrollment token ${request.params.id}`);
      await audit(tx, request, { action: 'enroll-token.delete', target: `enroll-token:${r.id}` });
    });
    return reply.code(204).send(null);
  });
};
