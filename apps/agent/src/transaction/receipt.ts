import type { ActivationOutcome, HealthVerdict, ReceiptPayload } from '@svc/release-core';
import { AgentError } from '../errors.js';
import { memberRecord, type DesiredState, type MemberRecord, type PlannedMember, type TxFacts } from '../journal/tx-data.js';

export interface DeviceIdentity {
  name: string;
  /** DER of the identity certificate used on the mTLS connection. */
  certificateDer: Uint8Array;
}

const OS_FIELDS = ['compatible', 'bundle_version', 'manifest_hash', 'previous_slot', 'installed_slot', 'booted_slot', 'bootloader_primary', 'mark', 'phase'] as const;

/** contracts 3: resulting digest follows the verdict (committed: candidate; otherwise what is live). */
function digestsOf(m: PlannedMember, r: MemberRecord) {
  const resulting = r.verdict === 'committed' ? m.digest : r.verdict === 'failed' ? (r.resulting_digest ?? r.previous_digest) : r.previous_digest;
  return { candidate_digest: m.digest, previous_digest: r.previous_digest, resulting_digest: resulting };
}

/**
 * The terminal receipt (spec 2.3, contracts 3). One component: `rollout` and the three
 * digests at the top level (plus `os` for an os-bundle). A transaction: `transaction` and
 * `members` ordered by position, each with its own digests and verdict, and no top-level digests.
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
  const receipt: Record<string, unknown> = {
    tenant: desired.tenant,
    device: { name: args.device.name, certificate: Buffer.from(args.device.certificateDer).toString('base64') },
    release: desired.release,
    activation: args.activation,
    health: args.health,
    timestamp: args.now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  if (desired.transaction.member_count === 1) {
    const { m, r } = records[0]!;
    receipt.rollout = m.rolloutId;
    Object.assign(receipt, digestsOf(m, r));
    // The A/B tool's fields exist once it installed something; a bundle refused before
    // install has no slot story to tell (the receipt's activation says "failed").
    if (m.kind === 'os-bundle' && typeof r.facts.installed_slot === 'string') {
      const os: Record<string, unknown> = {};
      for (const f of OS_FIELDS) os[f] = r.facts[f] ?? null;
      os.mark ??= 'none';
      receipt.os = os;
    }
  } else {
    receipt.transaction = { id: desired.transaction.id, member_count: desired.transaction.member_count };
    receipt.members = records.map(({ m, r }) => ({
      group: m.group,
      position: m.position,
      component: m.component,
      rollout: m.rolloutId,
      ...digestsOf(m, r),
      verdict: r.verdict,
    }));
  }
  return receipt as unknown as ReceiptPayload;
}
