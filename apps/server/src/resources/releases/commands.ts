/**
 * Signed releases (spec §1 rule 4, spec §4 "Release submission rules", spec §3 rule 6). Order:
 * verify the envelope with release-core against the tenant's registered, non-revoked authorizer
 * keys -> check the prerequisites against current state (component artifacts, target group and
 * its digest) -> publish the exact envelope bytes (JCS of the envelope, contracts §1) as an
 * immutable TUF target (`prepareRelease`, before any record: the signing repository commits its
 * own transaction) -> insert the record with its audit row (`publishRelease`). The same
 * envelope again answers the existing release.
 */
import { Readable } from 'node:stream';
import { envelopeBytes, normalizeUuid, parseEnvelope, verifyRelease, IDENTIFIER_PATTERNS, LIMITS, RELEASE_PAYLOAD_TYPE } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import { trustedAuthorizerKeys } from '../authorizer-keys/queries.js';
import { isSigningRepoError } from '../../signing-repo/errors.js';
import type { PublishingDeps } from '../publishing.js';
import type { Command } from '../unit-of-work.js';
import { insertRelease, releaseByVersion, targetGroup, type NewRelease, type ReleaseRow } from './queries.js';
import { checkComponentArtifacts, checkTargetPolicyDigest, releaseTargetPath } from './rules.js';
import type { ReleaseView } from './schemas.js';
import { releaseJson } from './views.js';

/** What `prepareRelease` leaves to do: nothing (the identical release exists) or the record to insert. */
export type PreparedRelease = { existing: ReleaseView } | { record: NewRelease };

/**
 * Verifies a submission and publishes its envelope into the signing repository (spec §4 rules
 * 1-3). Runs before the record's unit of work, never inside one.
 */
export async function prepareRelease(
  deps: PublishingDeps,
  tenantId: string,
  body: { envelope?: unknown; expected_product?: unknown },
): Promise<PreparedRelease> {
  if (typeof body.expected_product !== 'string' || !IDENTIFIER_PATTERNS.product.test(body.expected_product)) {
    throw new ServerError('RELEASE_INVALID', `expected_product: must match ${IDENTIFIER_PATTERNS.product.source}`);
  }
  if (typeof body.envelope !== 'object' || body.envelope === null || Array.isArray(body.envelope)) {
    throw new ServerError('RELEASE_INVALID', 'envelope: must be a DSSE envelope object');
  }
  const db = deps.db;
  const env = parseEnvelope(body.envelope, { maxBytes: LIMITS.releaseEnvelopeBytes, payloadTypes: [RELEASE_PAYLOAD_TYPE] });
  // spec §4 rule 1: signature, registered (non-revoked) authorizer key, tenant, product, validity, safety fields
  const verified = verifyRelease(env, {
    trustedKeys: await trustedAuthorizerKeys(db, tenantId),
    tenant: tenantId,
    product: body.expected_product,
    now: deps.clock(),
  });
  const { payload } = verified;

  // spec §3 rule 6: (product, version) is immutable; the identical envelope is an idempotent resubmission
  const existing = await releaseByVersion(db, tenantId, payload.product, payload.release.version);
  if (existing) return { existing: sameOrConflict(existing, verified.envelopeDigest) };

  // spec §4 rule 3: prerequisites
  await checkComponentArtifacts(db, tenantId, payload);
  const groupId = payload.rollout.target_group;
  const groupUuid = normalizeUuid(groupId);
  const group = groupUuid === undefined ? undefined : await targetGroup(db, tenantId, groupUuid);
  if (!group) throw new ServerError('RELEASE_PREREQUISITE', `rollout.target_group: no group ${JSON.stringify(groupId)} in this tenant`);
  checkTargetPolicyDigest(payload, { id: group.id, digest: group.snapshot_digest });

  // spec §4 rule 2: stage and publish the exact envelope as an immutable TUF target
  const bytes = envelopeBytes(env);
  const blob = await deps.blobs.put(Readable.from([Buffer.from(bytes)]), { maxBytes: LIMITS.releaseEnvelopeBytes });
  const target = releaseTargetPath(payload.product, payload.release.version);
  try {
    await deps.publishTargets(
      tenantId,
      [
        {
          path: target,
          digest: blob.digest,
          length: blob.length,
          custom: { kind: 'release', payload_digest: verified.payloadDigest, envelope_digest: verified.envelopeDigest },
        },
      ],
      { immutable: true },
    );
  } catch (e) {
    if (isSigningRepoError(e, 'TARGET_IMMUTABLE')) {
      throw new ServerError('RELEASE_CONFLICT', `release: ${payload.product} ${payload.release.version} is already published with another envelope`, {
        cause: e,
      });
    }
    throw e;
  }
  return {
    record: {
      product: payload.product,
      version: payload.release.version,
      payload_digest: verified.payloadDigest,
      envelope_digest: verified.envelopeDigest,
      keyid: verified.keyid,
      target,
      envelope_bytes: bytes,
    },
  };
}

/** POST /releases after `prepareRelease`: the record and its `release.publish` audit row. */
export const publishRelease: Command<NewRelease, { release: ReleaseView; created: boolean }> = async (uow, record) => {
  const row = await insertRelease(uow.trx, uow.tenant, record, uow.now);
  if (!row) {
    // a concurrent submission won the insert: same answer as a resubmission
    const winner = (await releaseByVersion(uow.trx, uow.tenant, record.product, record.version))!;
    return { release: sameOrConflict(winner, record.envelope_digest), created: false };
  }
  await uow.audit({
    action: 'release.publish',
    target: `release:${row.id}`,
    detail: { product: row.product, version: row.version, envelope_digest: row.envelope_digest, keyid: row.keyid },
  });
  return { release: releaseJson(row), created: true };
};

function sameOrConflict(existing: ReleaseRow, envelopeDigest: string): ReleaseView {
  if (existing.envelope_digest === envelopeDigest) return releaseJson(existing);
  throw new ServerError('RELEASE_CONFLICT', `release: ${existing.product} ${existing.version} is already published with envelope ${existing.envelope_digest}`);
}
