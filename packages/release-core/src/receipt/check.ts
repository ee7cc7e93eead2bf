import type { Digest } from '../digest.js';
import { ReleaseError } from '../errors.js';
import { transactionMembers } from '../release/transaction.js';
import { OS_BUNDLE_KIND, type ReleasePayload } from '../release/types.js';
import type { ReceiptPayload } from './types.js';

export interface ReceiptExpectation {
  release: ReleasePayload;
  payloadDigest: Digest;
  envelopeDigest: Digest;
  /** rollout id per component name (a single-component release has one entry) */
  rollouts: Readonly<Record<string, string>>;
  /** the deployment's transaction id; required for a multi-component release */
  transactionId?: string;
}

function mismatch(field: string, got: unknown, want: unknown): never {
  throw new ReleaseError('RECEIPT_MISMATCH', `receipt ${field} is ${JSON.stringify(got)}, the signed rollout has ${JSON.stringify(want)}`);
}

function same(field: string, got: unknown, want: unknown): void {
  if (got !== want) mismatch(field, got, want);
}

/**
 * spec §2.3 rule 5: every field of a verified receipt is checked against the signed release and its
 * rollouts; for a transaction the complete member set, in activation order, with each member's
 * rollout and candidate digest. The receipt must already be valid (verifyReceipt).
 */
export function checkReceiptAgainstRelease(receipt: ReceiptPayload, expected: ReceiptExpectation): void {
  const rel = expected.release;
  same('tenant', receipt.tenant, rel.tenant);
  same('release.product', receipt.release.product, rel.product);
  same('release.version', receipt.release.version, rel.release.version);
  same('release.payload_digest', receipt.release.payload_digest, expected.payloadDigest);
  same('release.envelope_digest', receipt.release.envelope_digest, expected.envelopeDigest);
  const members = transactionMembers(rel);
  if (members.length === 1) {
    const only = members[0]!;
    // spec §2.3 rule 1: a single-component release has a single receipt bound to its rollout
    if (receipt.transaction !== undefined || receipt.members !== undefined)
      throw new ReleaseError('RECEIPT_MISMATCH', 'a single-component release needs a single-component receipt, not a transaction receipt');
    same('rollout', receipt.rollout, rolloutOf(expected, only.component));
    same('candidate_digest', receipt.candidate_digest, only.digest);
    // spec §2.3 rule 4: an OS release binds the A/B tool's result, and only an OS release does
    if ((only.kind === OS_BUNDLE_KIND) !== (receipt.os !== undefined))
      throw new ReleaseError(
        'RECEIPT_MISMATCH',
        only.kind === OS_BUNDLE_KIND ? 'receipt of an os-bundle release lacks the "os" result' : 'receipt has an "os" result but the release has no os-bundle',
      );
    return;
  }
  // spec §2.3 rule 3 / 3 rule 2: one receipt per transaction, never mixed with another deployment
  if (receipt.transaction === undefined || receipt.members === undefined)
    throw new ReleaseError('RECEIPT_MISMATCH', `a ${members.length}-component release needs a transaction receipt with members`);
  if (expected.transactionId === undefined) throw new TypeError('checkReceiptAgainstRelease: transactionId is required for a multi-component release');
  same('transaction.id', receipt.transaction.id, expected.transactionId);
  same('transaction.member_count', receipt.transaction.member_count, members.length);
  if (receipt.members.length !== members.length)
    throw new ReleaseError('RECEIPT_MISMATCH', `receipt has ${receipt.members.length} members, the release has ${members.length}`);
  members.forEach((want, i) => {
    const got = receipt.members![i]!;
    same(`members[${i}].component`, got.component, want.component);
    same(`members[${i}].group`, got.group, want.group);
    same(`members[${i}].position`, got.position, want.position);
    same(`members[${i}].rollout`, got.rollout, rolloutOf(expected, want.component));
    same(`members[${i}].candidate_digest`, got.candidate_digest, want.digest);
  });
}

function rolloutOf(expected: ReceiptExpectation, component: string): string {
  const id = expected.rollouts[component];
  if (id === undefined) throw new TypeError(`checkReceiptAgainstRelease: no rollout id given for component ${JSON.stringify(component)}`);
  return id;
}
