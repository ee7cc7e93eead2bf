/**
 * Signed releases (spec 1.4, 4 "Release submission rules", 3.6). Order: verify the envelope
 * with release-core against the tenant's registered, non-revoked authorizer keys -> check the
 * prerequisites against current state (component artifacts, target group and its digest) ->
 * publish the exact envelope bytes (JCS of the envelope, contracts 1) as an immutable TUF
 * target -> insert the record. The same envelope again answers the existing release.
 */
import { Readable } from 'node:stream';
import {
  envelopeBytes,
  parseEnvelope,
  verifyRelease,
  RELEASE_PAYLOAD_TYPE,
  type Envelope,
  type ReleasePayload,
} from '@svc/release-core';
import { trustedAuthorizerKeys } from '../resources/authorizer-keys/queries.js';
import { isUniqueViolation, type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import type { PipelineDeps } from '../resources/pipeline-deps.js';
import { isSigningRepoError } from '../signing-repo/errors.js';
import { ServerError } from '../errors/server-error.js';

export const MAX_RELEASE_ENVELOPE_BYTES = 1024 * 1024;
const PRODUCT_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export interface ReleaseView {
  id: string;
  product: string;
  version: string;
  payload_digest: string;
  envelope_digest: string;
  keyid: string;
  target: string;
  created_at: string;
}

/** The TUF target path of a release envelope (docs/pipeline.md). */
export function releaseTargetPath(product: string, version: string): string {
  return `releases/${product}/${version}.dsse.json`;
}

type ReleaseRow = { id: string; product: string; version: string; payload_digest: string; envelope_digest: string; keyid: string; target: string; created_at: Date };

function view(r: ReleaseRow): ReleaseView {
  return {
    id: r.id,
    product: r.product,
    version: r.version,
    payload_digest: r.payload_digest,
    envelope_digest: r.envelope_digest,
    keyid: r.keyid,
    target: r.target,
    created_at: r.created_at.toISOString(),
  };
}

const RELEASE_COLUMNS = ['id', 'product', 'version', 'payload_digest', 'envelope_digest', 'keyid', 'target', 'created_at'] as const;

/**
 * spec 4 prerequisites, also re-run at rollout start: every component names an artifact of
 * this tenant with the same name, version, digest, length, target and media type.
 */
export async function checkComponentArtifacts(db: Db, tenantId: string, payload: ReleasePayload): Promise<Map<string, string>> {
  const ids = payload.components.map((c) => c.artifact.id).filter(isUuid);
  const rows = ids.length
    ? await db.selectFrom('artifacts').select(['id', 'name', 'version', 'digest', 'length', 'target', 'media_type', 'kind']).where('tenant_id', '=', tenantId).where('id', 'in', ids).execute()
    : [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const out = new Map<string, string>();
  payload.components.forEach((c, i) => {
    const at = `components[${i}]`;
    const a = byId.get(c.artifact.id);
    if (!a) throw new ServerError('RELEASE_PREREQUISITE', `${at}.artifact.id: no artifact ${c.artifact.id} in this tenant (publish it first)`);
    const mismatch: [string, unknown, unknown][] = [
      ['artifact.name', c.artifact.name, a.name],
      ['artifact.version', c.artifact.version, a.version],
      ['digest', c.digest, a.digest],
      ['length', c.length, Number(a.length)],
      ['target', c.target, a.target],
      ['media_type', c.media_type, a.media_type],
      ['kind', c.kind, a.kind],
    ];
    for (const [field, signed, stored] of mismatch) {
      if (signed !== stored) {
        throw new ServerError('RELEASE_PREREQUISITE', `${at}.${field}: signed ${JSON.stringify(signed)} but artifact ${a.id} has ${JSON.stringify(stored)}`);
      }
    }
    out.set(c.name, a.id);
  });
  return out;
}

/** spec 4.3: the target group exists and its CURRENT snapshot digest was copied into the payload. */
export async function checkTargetGroup(db: Db, tenantId: string, payload: ReleasePayload, opts: { lock?: boolean } = {}): Promise<{ id: string; snapshot_digest: string }> {
  const groupId = payload.rollout.target_group;
  let q = db.selectFrom('device_groups').select(['id', 'snapshot_digest']).where('tenant_id', '=', tenantId).where('id', '=', isUuid(groupId) ? groupId : '00000000-0000-0000-0000-000000000000');
  if (opts.lock) q = q.forUpdate();
  const g = await q.executeTakeFirst();
  if (!g) throw new ServerError('RELEASE_PREREQUISITE', `rollout.target_group: no group ${JSON.stringify(groupId)} in this tenant`);
  if (g.snapshot_digest !== payload.rollout.target_policy_digest) {
    throw new ServerError(
      'GROUP_CHANGED',
      `rollout.target_policy_digest: signed ${payload.rollout.target_policy_digest} but group ${g.id} is now ${g.snapshot_digest} (membership changed; sign a new release)`,
    );
  }
  return g;
}

export async function submitRelease(
  deps: PipelineDeps,
  tenantId: string,
  body: { envelope?: unknown; expected_product?: unknown },
): Promise<{ release: ReleaseView; created: boolean }> {
  if (typeof body.expected_product !== 'string' || !PRODUCT_RE.test(body.expected_product)) {
    throw new ServerError('RELEASE_INVALID', `expected_product: must match ${PRODUCT_RE.source}`);
  }
  if (typeof body.envelope !== 'object' || body.envelope === null || Array.isArray(body.envelope)) {
    throw new ServerError('RELEASE_INVALID', 'envelope: must be a DSSE envelope object');
  }
  const db = deps.db;
  const now = deps.clock();
  const env: Envelope = parseEnvelope(body.envelope, { maxBytes: MAX_RELEASE_ENVELOPE_BYTES, payloadTypes: [RELEASE_PAYLOAD_TYPE] });
  // spec 4.1: signature, registered (non-revoked) authorizer key, tenant, product, validity, safety fields
  const verified = verifyRelease(env, { trustedKeys: await trustedAuthorizerKeys(db, tenantId), tenant: tenantId, product: body.expected_product, now });
  const { payload } = verified;

  // spec 3.6: (product, version) is immutable; the identical envelope is an idempotent resubmission
  const existing = await db.selectFrom('releases').select(RELEASE_COLUMNS).where('tenant_id', '=', tenantId).where('product', '=', payload.product).where('version', '=', payload.release.version).executeTakeFirst();
  if (existing) return sameOrConflict(existing, verified.envelopeDigest);

  // spec 4.3 prerequisites
  await checkComponentArtifacts(db, tenantId, payload);
  await checkTargetGroup(db, tenantId, payload);

  // spec 4.2: stage and publish the exact envelope as an immutable TUF target
  const bytes = envelopeBytes(env);
  const blob = await deps.blobs.put(Readable.from([Buffer.from(bytes)]), { maxBytes: MAX_RELEASE_ENVELOPE_BYTES });
  const target = releaseTargetPath(payload.product, payload.release.version);
  try {
    await deps.publishTargets(
      tenantId,
      [{ path: target, digest: blob.digest as never, length: blob.length, custom: { kind: 'release', payload_digest: verified.payloadDigest, envelope_digest: verified.envelopeDigest } }],
      { immutable: true },
    );
  } catch (e) {
    if (isSigningRepoError(e, 'TARGET_IMMUTABLE')) {
      throw new ServerError('RELEASE_CONFLICT', `release: ${payload.product} ${payload.release.version} is already published with another envelope`, { cause: e });
    }
    throw e;
  }
  try {
    const row = await db
      .insertInto('releases')
      .values({
        tenant_id: tenantId,
        product: payload.product,
        version: payload.release.version,
        payload_digest: verified.payloadDigest,
        envelope_digest: verified.envelopeDigest,
        keyid: verified.keyid,
        target,
        envelope_bytes: Buffer.from(bytes),
        created_at: now,
      })
      .returning(RELEASE_COLUMNS)
      .executeTakeFirstOrThrow();
    return { release: view(row), created: true };
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    // a concurrent submission won the insert: same answer as a resubmission
    const winner = await db.selectFrom('releases').select(RELEASE_COLUMNS).where('tenant_id', '=', tenantId).where('product', '=', payload.product).where('version', '=', payload.release.version).executeTakeFirstOrThrow();
    return sameOrConflict(winner, verified.envelopeDigest);
  }
}

function sameOrConflict(existing: ReleaseRow, envelopeDigest: string): { release: ReleaseView; created: boolean } {
  if (existing.envelope_digest === envelopeDigest) return { release: view(existing), created: false };
  throw new ServerError('RELEASE_CONFLICT', `release: ${existing.product} ${existing.version} is already published with envelope ${existing.envelope_digest}`);
}

export async function getRelease(db: Db, tenantId: string, id: string): Promise<ReleaseView | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await db.selectFrom('releases').select(RELEASE_COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  return r ? view(r) : undefined;
}

export async function listReleases(db: Db, tenantId: string, filter: { product?: string }, limit: number, offset: number): Promise<{ releases: ReleaseView[]; total: number; limit: number; offset: number; counts: Record<string, number> }> {
  let q = db.selectFrom('releases').where('tenant_id', '=', tenantId);
  if (filter.product !== undefined) q = q.where('product', '=', filter.product);
  const rows = await q.select(RELEASE_COLUMNS).orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset).execute();
  const total = await q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  const byProduct = await db.selectFrom('releases').select(['product', (eb) => eb.fn.countAll<string>().as('n')]).where('tenant_id', '=', tenantId).groupBy('product').execute();
  return { releases: rows.map(view), total: Number(total.n), limit, offset, counts: Object.fromEntries(byProduct.map((r) => [r.product, Number(r.n)])) };
}

/** The stored, verified-at-submission envelope (exact bytes) of a release. */
export async function releaseEnvelope(db: Db, tenantId: string, id: string): Promise<{ row: ReleaseRow; envelope: Envelope; bytes: Uint8Array } | undefined> {
  if (!isUuid(id)) return undefined;
  const r = await db.selectFrom('releases').select([...RELEASE_COLUMNS, 'envelope_bytes']).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  if (!r) return undefined;
  return { row: r, envelope: parseEnvelope(r.envelope_bytes, { maxBytes: MAX_RELEASE_ENVELOPE_BYTES, payloadTypes: [RELEASE_PAYLOAD_TYPE] }), bytes: r.envelope_bytes };
}
