import { buildReceiptPayload, type ActivationOutcome, type HealthVerdict, type ReceiptMember, type ReceiptPayload } from '@svc/release-core';
import { AgentError } from '../errors.js';
import { memberRecord, type DesiredState, type MemberRecord, type PlannedMember, type TxFacts } from '../journal/tx-data.js';

export interface DeviceIdentity {
  name: string;
  /** DER of the identity certificate used on the mTLS connection. */
  certificateDer: Uint8Array;
}

/** contracts §3: resulting digest follows the verdict (committed: candidate; otherwise what is live). */
function memberOutcome(m: PlannedMember, r: MemberRecord): ReceiptMember {
  const resulting = r.verdict === 'committed' ? m.digest : r.verdict === 'failed' ? (r.resulting_digest ?? r.previous_digest) : r.previous_digest;
  return {
    group: m.group,
    position: m.position,
    component: m.component,
    rollout: m.rolloutId,
    candidate_digest: m.digest,
    previous_digest: r.previous_digest,
    resulting_digest: resulting,
    verdict: r.verdict,
  };
}

/**
 * The terminal receipt (spec §2.3, contracts §3) from what the journal recorded: each member's
 * digests and verdict in activation order, and for an os-bundle the A/B tool's facts.
 * release-core's buildReceiptPayload shapes it (one component or a transaction).
 */
export function buildReceipt(args: {
  desired: DesiredState;
  data: TxFacts;
  device: DeviceIdentity;
  activation: ActivationOutcome;
  health: HealthVerdict;
  now: Date;
}): ReceiptPayload {
  const { desired, data } = args;
  if (desired.release === null) throw new AgentError('RECEIPT_FAILED', 'legacy work has no signed release to bind a receipt to', { field: 'release' });
  const members = [...desired.members].sort((a, b) => a.position - b.position);
  const records = members.map((m) => ({ m, r: memberRecord(data, m.component) }));
  // The A/B tool's fields exist once it installed something; a bundle refused before
  // install has no slot story to tell (the receipt's activation says "failed").
  const os =
    desired.transaction.member_count === 1 ? records.find(({ m, r }) => m.kind === 'os-bundle' && typeof r.facts.installed_slot === 'string') : undefined;
  return buildReceiptPayload({
    tenant: desired.tenant,
    device: { name: args.device.name, certificateDer: args.device.certificateDer },
    release: desired.release,
    transaction: desired.transaction,
    members: records.map(({ m, r }) => memberOutcome(m, r)),
    activation: args.activation,
    health: args.health,
    ...(os ? { os: os.r.facts } : {}),
    now: args.now,
  });
}
