/**
 * What a receipt is checked against (spec §2.3 rule 5): the signed deployment it names, its
 * release payload and digests, and its member rollouts. All of it is fixed when the rollout
 * starts (a release is immutable, a deployment's release and members never change), so it is
 * read and parsed once per deployment and kept, bounded, in process memory; receipts arriving
 * together for a deployment not yet cached share one read. Only what was found is kept: a name
 * that resolves to nothing is asked again next time. Device state, counters and waves change
 * and are never cached.
 */
import { normalizeUuid, type ReceiptExpectation, type ReceiptPayload } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { releaseEvidence } from '../releases/queries.js';
import { storedReleasePayload } from '../releases/rules.js';
import { deploymentMembers } from '../rollouts/queries.js';
import { deploymentRelease, signedDeploymentById, signedDeploymentOfRollout } from './queries.js';
import { SERVER_TUNING } from '../../limits.js';

export interface SignedDeployment {
  id: string;
  releaseId: string;
  /** The member rollout a receipt row records (the first by position). */
  leadRolloutId: string;
  expected: ReceiptExpectation;
}

/** `<tenant> tx|rollout <uuid>` -> deployment id */
const deploymentOf = new Map<string, Promise<string | undefined>>();
const deployments = new Map<string, Promise<SignedDeployment>>();

/** `load()` once per key while it is cached; a failed or empty answer is forgotten. */
function once<V>(map: Map<string, Promise<V>>, key: string, load: () => Promise<V>): Promise<V> {
  let p = map.get(key);
  if (p === undefined) {
    if (map.size >= SERVER_TUNING.signedDeploymentCacheEntries) map.delete(map.keys().next().value as string);
    p = load();
    map.set(key, p);
    p.then(
      (v) => (v === undefined ? map.delete(key) : undefined),
      () => map.delete(key),
    );
  }
  return p;
}

/** The signed deployment a verified receipt names (its transaction, else its rollout), in this tenant. */
export async function signedDeploymentFor(db: Db, tenant: string, r: ReceiptPayload): Promise<SignedDeployment> {
  const txId = r.transaction?.id;
  const rolloutId = r.rollout;
  let key: string;
  let lookup: (id: string) => Promise<string | undefined>;
  let missing: string;
  if (txId !== undefined) {
    key = `${tenant} tx ${normalizeUuid(txId) ?? ''}`;
    lookup = (id) => signedDeploymentById(db, tenant, id);
    missing = `transaction.id: no release transaction ${txId} in this tenant`;
  } else if (typeof rolloutId === 'string') {
    key = `${tenant} rollout ${normalizeUuid(rolloutId) ?? ''}`;
    lookup = (id) => signedDeploymentOfRollout(db, tenant, id);
    missing = `rollout: no signed rollout ${rolloutId} in this tenant`;
  } else {
    throw new ServerError('RECEIPT_UNEXPECTED', 'rollout: the receipt names neither a rollout nor a transaction');
  }
  const uuid = normalizeUuid(txId ?? rolloutId!);
  const id = uuid === undefined ? undefined : await once(deploymentOf, key, () => lookup(uuid));
  if (id === undefined) throw new ServerError('RECEIPT_UNEXPECTED', missing);
  return once(deployments, id, () => load(db, id));
}

async function load(db: Db, deploymentId: string): Promise<SignedDeployment> {
  const dep = await deploymentRelease(db, deploymentId);
  const [rel, members] = await Promise.all([releaseEvidence(db, dep.release_id), deploymentMembers(db, dep.id)]);
  // the stored envelope was verified at submission and at rollout start; a receipt is evidence of
  // what happened under it, so a later key revocation does not make the receipt unacceptable
  const expected: ReceiptExpectation = {
    release: storedReleasePayload(rel.envelope_bytes),
    payloadDigest: rel.payload_digest,
    envelopeDigest: rel.envelope_digest,
    rollouts: Object.fromEntries(members.map((m) => [m.component, m.id])),
  };
  if (dep.member_count > 1) expected.transactionId = dep.id;
  return { id: dep.id, releaseId: dep.release_id, leadRolloutId: members[0]!.id, expected };
}
