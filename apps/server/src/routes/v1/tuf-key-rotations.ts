import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { AppContext, V1Routes } from '../../http/context.js';
import { execute } from '../../http/execute.js';
import { ErrorResponses, iso, Strict } from '../../http/schemas.js';
import { SERVER_LIMITS } from '../../limits.js';
import {
  activateTufOnlineKeys,
  cancelTufOnlineKeyRotation,
  deleteTufRootKey,
  exportTufRootKey,
  prepareTufOnlineKeyRotation,
  rotateTufOnlineKeys,
} from '../../resources/tuf-keys/commands.js';
import { assertRotationRoles, ONLINE_ROLES, type OnlineKeyRotation, type SigningRepository } from '../../signing-repo/index.js';
import { Pending, RootKeyDeleted, RootKeyExport, Rotation } from '../../resources/tuf-keys/schemas.js';

function repoOf(ctx: AppContext): SigningRepository {
  if (ctx.signingRepo === undefined) throw new Error('AppContext.signingRepo is required by the TUF key rotation routes');
  return ctx.signingRepo;
}

const SignedRoot = Type.Object(
  {
    signed: Type.Object({}, { additionalProperties: true }),
    signatures: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: SERVER_LIMITS.signedRootSignatures }),
  },
  { additionalProperties: true },
);

function view(state: 'committed' | 'prepared', r: OnlineKeyRotation & { unsignedRoot?: Buffer }) {
  return {
    state,
    root_version: r.rootVersion,
    roles: r.roles,
    key_ids: r.keyIds,
    ...(r.unsignedRoot ? { unsigned_root: JSON.parse(r.unsignedRoot.toString('utf8')) as unknown } : {}),
  };
}

/**
 * Planned rotation of the tenant's TUF online keys through root N+1 (docs/signing-repository.md
 * "Rotating the online keys"). Admin only and audited. An API rather than a `dist/main.js`
 * subcommand: the rotation runs inside the serving processes' own transactions (every process
 * reads the keys from the database at each signing, so none restarts), the embedded database
 * admits no second process while the server runs, and the offline ceremony needs the prepared
 * root to travel to the offline machine and back, which an authenticated download and upload do.
 *
 *   POST   /tuf-key-rotations {roles, root_signing: "server"}   root key on the server: done at once
 *   POST   /tuf-key-rotations {roles, root_signing: "offline"}  pending keys + unsigned root N+1
 *   GET    /tuf-key-rotations/pending[/root.json]              the prepared rotation / its root to sign
 *   POST   /tuf-key-rotations/pending/signed-root               the signed root N+1: checked, keys activated
 *   DELETE /tuf-key-rotations/pending                           cancel
 *   POST   /tuf-root-key/export, DELETE /tuf-root-key?key_id=   move the root key into offline custody
 */
export const tufKeyRotationsRoutes: V1Routes = async (app, { ctx }) => {
  app.post(
    '/tuf-key-rotations',
    {
      config: {
        permission: 'admin.manage',
        summary: 'Rotate TUF online keys through root N+1 (signed by the server-held root key, or prepared for offline signing)',
      },
      schema: {
        body: Strict({
          roles: Type.Array(Type.Enum([...ONLINE_ROLES]), { minItems: 1, maxItems: 3, uniqueItems: true }),
          root_signing: Type.Enum(['server', 'offline']),
        }),
        response: { 201: Rotation, ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const repo = repoOf(ctx);
      const roles = assertRotationRoles(request.body.roles, 'body.roles');
      await repo.ensureTenantRepo(principalOf(request).tenantId);
      if (request.body.root_signing === 'server') {
        const r = await execute(ctx, request, rotateTufOnlineKeys, { repo, roles });
        return reply.code(201).send(view('committed', r));
      }
      const r = await execute(ctx, request, prepareTufOnlineKeyRotation, { repo, roles });
      return reply.code(201).send(view('prepared', r));
    },
  );

  const pending = (request: Parameters<typeof principalOf>[0]) => repoOf(ctx).pendingOnlineKeyRotation(principalOf(request).tenantId);

  app.get(
    '/tuf-key-rotations/pending',
    {
      config: { permission: 'admin.manage', summary: 'The prepared TUF online key rotation waiting for its root to be signed offline' },
      schema: { response: { 200: Pending, ...ErrorResponses } },
    },
    async (request) => {
      const p = await pending(request);
      return {
        root_version: p.rootVersion,
        current_root_version: p.currentRootVersion,
        stale: p.currentRootVersion + 1 !== p.rootVersion,
        roles: p.roles,
        key_ids: p.keyIds,
        created_at: iso(p.createdAt),
        unsigned_root: JSON.parse(p.unsignedRoot.toString('utf8')) as unknown,
      };
    },
  );

  app.get(
    '/tuf-key-rotations/pending/root.json',
    {
      config: { permission: 'admin.manage', summary: 'The unsigned root N+1 of the prepared rotation, exactly as stored (sign it with svc-release sign-root)' },
      schema: { response: { 200: Type.Unknown({ description: 'application/json: TUF root metadata without signatures' }), ...ErrorResponses } },
    },
    async (request, reply) => {
      const p = await pending(request);
      return reply.type('application/json').header('content-disposition', `attachment; filename="${p.rootVersion}.root.unsigned.json"`).send(p.unsignedRoot);
    },
  );

  app.post(
    '/tuf-key-rotations/pending/signed-root',
    {
      bodyLimit: SERVER_LIMITS.signedRootBytes,
      config: { permission: 'admin.manage', summary: 'Accept root N+1 signed offline: checked against root N and itself, then the new online keys sign' },
      schema: { body: SignedRoot, response: { 200: Rotation, ...ErrorResponses } },
    },
    async (request) => view('committed', await execute(ctx, request, activateTufOnlineKeys, { repo: repoOf(ctx), signedRoot: request.body })),
  );

  app.delete(
    '/tuf-key-rotations/pending',
    {
      config: { permission: 'admin.manage', summary: 'Cancel the prepared TUF online key rotation (its pending keys are deleted)' },
      schema: { response: { 200: Rotation, ...ErrorResponses } },
    },
    async (request) => {
      const r = await execute(ctx, request, cancelTufOnlineKeyRotation, { repo: repoOf(ctx) });
      return { state: 'cancelled' as const, root_version: r.rootVersion, roles: r.roles, key_ids: {} };
    },
  );

  app.post(
    '/tuf-root-key/export',
    {
      config: { permission: 'admin.manage', summary: 'The server-held TUF root private key (PKCS#8 PEM), to move it into offline custody' },
      schema: { response: { 200: RootKeyExport, ...ErrorResponses } },
    },
    async (request, reply) => {
      const r = await execute(ctx, request, exportTufRootKey, { repo: repoOf(ctx) });
      return reply.header('cache-control', 'no-store').send({ key_id: r.keyId, private_key_pem: r.pem });
    },
  );

  app.delete(
    '/tuf-root-key',
    {
      config: { permission: 'admin.manage', summary: 'Delete the server-held TUF root key once it is in offline custody (key_id must name it)' },
      schema: {
        querystring: Strict({ key_id: Type.String({ pattern: '^[0-9a-f]{64}$' }) }),
        response: { 200: RootKeyDeleted, ...ErrorResponses },
      },
    },
    async (request) => {
      const r = await execute(ctx, request, deleteTufRootKey, { repo: repoOf(ctx), keyId: request.query.key_id });
      return { key_id: r.keyId, deleted: true };
    },
  );
};
