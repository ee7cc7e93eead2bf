import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import type { AppContext, V1Routes } from '../../http/context.js';
import { actorOf, execute } from '../../http/execute.js';
import { listPage } from '../../http/pagination.js';
import { ErrorResponses, PageOf, PageQuery, Strict } from '../../http/schemas.js';
import { caseExportStream, EVIDENCE_MANIFEST_TYPE } from '../../resources/case-exports/archive.js';
import { recordCaseExport, recordFirstEvidenceKey, rotateEvidenceKey } from '../../resources/case-exports/commands.js';
import { currentSigningKey, firstEvidenceKey, rotateEvidenceKeyFile, type EvidenceKey } from '../../resources/case-exports/evidence-key.js';
import { currentEvidenceKey, evidenceKeyCounts, listEvidenceKeys, type EvidenceKeyRow } from '../../resources/case-exports/queries.js';
import { caseOr404 } from '../../resources/cases/commands.js';
import { getCase, latestAuditSeq } from '../../resources/cases/queries.js';
import type { SigningRepository } from '../../signing-repo/index.js';
import { CurrentEvidenceKey, EvidenceKeyRecord, type EvidenceKeyView } from '../../resources/case-exports/schemas.js';

function repoOf(ctx: AppContext): SigningRepository {
  if (ctx.signingRepo === undefined) throw new Error('AppContext.signingRepo (its key directory and blob store) is required by the case export routes');
  return ctx.signingRepo;
}

function evidenceKeyView(k: EvidenceKeyRow): EvidenceKeyView {
  return {
    seq: k.seq,
    keyid: k.keyid,
    algorithm: 'ed25519' as const,
    public_key_pem: k.public_key_pem,
    valid_from: new Date(k.valid_from).toISOString(),
    valid_until: k.valid_until === null ? null : new Date(k.valid_until).toISOString(),
    created_by: k.created_by,
    retired_by: k.retired_by,
  };
}

/**
 * The key the tenant's exports are signed with: the recorded current key (KEY_UNAVAILABLE when
 * it is missing or another key), or on first use the stored key or a new one, stored once, which
 * is recorded as key 1.
 */
async function signingKey(ctx: AppContext, request: FastifyRequest): Promise<EvidenceKey> {
  const tenantId = principalOf(request).tenantId;
  const keys = repoOf(ctx).wrappedKeys;
  const recorded = await currentSigningKey(ctx.store.db, keys, tenantId);
  if (recorded !== undefined) return recorded;
  const first = await firstEvidenceKey(keys, tenantId);
  await execute(ctx, request, recordFirstEvidenceKey, {
    keyid: first.key.keyid,
    publicKeyPem: first.key.publicKeyPem,
    ...(first.store ? { store: first.store } : {}),
  });
  // what is recorded now decides (a concurrent first use recorded its own key)
  const current = await currentSigningKey(ctx.store.db, keys, tenantId);
  if (current === undefined) throw new Error('the first evidence key was recorded and is not current');
  return current;
}

/** The tenant's current evidence key record, recording the key file on first use (signingKey). */
async function currentKeyRecord(ctx: AppContext, request: FastifyRequest): Promise<EvidenceKeyRow> {
  const tenantId = principalOf(request).tenantId;
  let row = await currentEvidenceKey(ctx.store.db, tenantId);
  if (row === undefined) {
    await signingKey(ctx, request);
    row = await currentEvidenceKey(ctx.store.db, tenantId);
  }
  if (row === undefined) throw new Error('no evidence key is recorded after its first use');
  return row;
}

/** Case export (docs/article-14.md "Case export"): one signed, streamed tar per case, and the public keys that verify them. */
export const caseExportsRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  app.get(
    '/evidence-key',
    {
      config: {
        permission: 'evidence.read',
        summary: "The tenant's current evidence public key: it verifies case-export manifests (svc-release verify-evidence)",
      },
      schema: {
        response: {
          200: CurrentEvidenceKey,
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      // published from the record: the public key stays readable even when its private key file is not
      const v = evidenceKeyView(await currentKeyRecord(ctx, request));
      return {
        keyid: v.keyid,
        seq: v.seq,
        algorithm: v.algorithm,
        payload_type: EVIDENCE_MANIFEST_TYPE,
        public_key_pem: v.public_key_pem,
        valid_from: v.valid_from,
      };
    },
  );

  app.get(
    '/evidence-keys',
    {
      config: {
        permission: 'evidence.read',
        summary: 'Every evidence key that signed case exports, oldest first, with its validity period (svc-release verify-evidence --keys)',
      },
      schema: {
        querystring: Strict({ ...PageQuery }),
        response: {
          200: PageOf('evidence_keys', EvidenceKeyRecord, Type.Object({ current: Type.Integer(), retired: Type.Integer() }), {
            before: { payload_type: Type.String() },
          }),
          ...ErrorResponses,
        },
      },
    },
    async (request) =>
      listPage(db, request.query, 'evidence_keys', async (snap, { limit, offset }) => {
        const tenantId = principalOf(request).tenantId;
        const rows = await listEvidenceKeys(snap, tenantId, limit, offset);
        const { total, retired } = await evidenceKeyCounts(snap, tenantId);
        return {
          items: rows.map(evidenceKeyView),
          payload_type: EVIDENCE_MANIFEST_TYPE,
          total,
          counts: { current: total - retired, retired },
        };
      }),
  );

  app.post(
    '/evidence-keys/rotate',
    {
      config: { permission: 'admin.manage', summary: 'Rotate the evidence key: the current key is retired (still published) and a new one signs from now on' },
      schema: { response: { 200: EvidenceKeyRecord, ...ErrorResponses } },
    },
    async (request) => {
      // the key in use is recorded first (a key file older than the records keeps its exports verifiable)
      const previous = await currentKeyRecord(ctx, request);
      const row = await rotateEvidenceKeyFile(repoOf(ctx).wrappedKeys, principalOf(request).tenantId, (next) =>
        execute(ctx, request, rotateEvidenceKey, { previousKeyid: previous.keyid, next }),
      );
      return evidenceKeyView(row);
    },
  );

  app.get(
    '/cases/:id/export',
    {
      config: {
        permission: 'evidence.read',
        summary: 'The evidence archive of a case (tar, streamed): every record, document, PDF, attachment, receipt and audit event, with a signed manifest',
      },
      schema: {
        params: Strict({ id: Type.String({ maxLength: 64 }) }),
        response: { 200: Type.Unknown({ description: 'application/x-tar' }), ...ErrorResponses },
      },
    },
    async (request, reply) => {
      const tenantId = principalOf(request).tenantId;
      const repo = repoOf(ctx);
      const c = await caseOr404(db, tenantId, request.params.id, getCase);
      // the key is ready (recorded on first use, its stored key checked) before the audit row and the first byte
      const key = await signingKey(ctx, request);
      const { exportedAt } = await execute(ctx, request, recordCaseExport, { caseId: c.id, keyid: key.keyid });
      const auditCutoff = await latestAuditSeq(db, tenantId);
      const fresh = await caseOr404(db, tenantId, c.id, getCase);
      void reply
        .type('application/x-tar')
        .header('content-disposition', `attachment; filename="case-${c.id}-${exportedAt.toISOString().replace(/[:.]/g, '')}.tar"`);
      return reply.send(caseExportStream({ db, blobs: repo.blobs, tenantId, caseRow: fresh, exportedAt, exportedBy: actorOf(request).name, auditCutoff, key }));
    },
  );
};
