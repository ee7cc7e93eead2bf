import { Type } from 'typebox';
import { audit } from '../../audit/record.js';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, PageQuery, Strict, Uuid } from '../../http/schemas.js';
import { getAuthorizerKey, listAuthorizerKeys, registerAuthorizerKey, revokeAuthorizerKey } from '../../pipeline/authorizer-keys.js';

const AuthorizerKey = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    keyid: Type.String(),
    public_key_pem: Type.String(),
    created_at: Type.String(),
    revoked_at: Type.Union([Type.String(), Type.Null()]),
    status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
  },
  { additionalProperties: false },
);
const IdParams = Strict({ id: Type.String({ maxLength: 64 }) });

/** spec 4.3 / contracts 6: trusted Ed25519 authorizer keys; revoked keys stay listed. */
export const authorizerKeysRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.post('/authorizer-keys', {
    config: { permission: 'keys.write', summary: 'Register a trusted Ed25519 authorizer key' },
    schema: { body: Strict({ name: Type.String({ minLength: 1, maxLength: 128 }), public_key_pem: Type.String({ minLength: 1, maxLength: 4096 }) }), response: { 201: AuthorizerKey, ...ErrorResponses } },
  }, async (request, reply) => {
    const key = await registerAuthorizerKey(db, principalOf(request).tenantId, request.body, ctx.now());
    await audit(db, request, { action: 'authorizer-key.register', target: `authorizer-key:${key.id}`, detail: { keyid: key.keyid, name: key.name } });
    return reply.code(201).send(key);
  });

  app.get('/authorizer-keys', {
    config: { permission: 'keys.read', summary: 'List authorizer keys (active and revoked)' },
    schema: {
      querystring: Strict({ ...PageQuery }),
      response: { 200: Type.Object({ authorizer_keys: Type.Array(AuthorizerKey), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer(), counts: Type.Object({ active: Type.Integer(), revoked: Type.Integer() }) }), ...ErrorResponses },
    },
  }, async (request) => {
    const { limit, offset } = page(request.query);
    const r = await listAuthorizerKeys(db, principalOf(request).tenantId, limit, offset);
    return { authorizer_keys: r.keys, total: r.total, limit, offset, counts: r.counts };
  });

  app.get('/authorizer-keys/:id', {
    config: { permission: 'keys.read', summary: 'One authorizer key' },
    schema: { params: IdParams, response: { 200: AuthorizerKey, ...ErrorResponses } },
  }, async (request) => {
    const k = await getAuthorizerKey(db, principalOf(request).tenantId, request.params.id);
    if (!k) throw notFound(`authorizer key ${request.params.id}`);
    return k;
  });

  // Revocation keeps the record (evidence of what was trusted); both spellings are offered.
  const revoke = async (request: { params: { id: string } } & Parameters<typeof principalOf>[0]) => {
    const k = await revokeAuthorizerKey(db, principalOf(request).tenantId, request.params.id, ctx.now());
    await audit(db, request, { action: 'authorizer-key.revoke', target: `authorizer-key:${k.id}`, detail: { keyid: k.keyid } });
    return k;
  };
  app.post('/authorizer-keys/:id/revoke', {
    config: { permission: 'keys.write', summary: 'Revoke an authorizer key (kept, marked revoked)' },
    schema: { params: IdParams, response: { 200: AuthorizerKey, ...ErrorResponses } },
  }, async (request) => revoke(request));
  app.delete('/authorizer-keys/:id', {
    config: { permission: 'keys.write', summary: 'Revoke an authorizer key (same as POST /revoke)' },
    schema: { params: IdParams, response: { 200: AuthorizerKey, ...ErrorResponses } },
  }, async (request) => revoke(request));
};
