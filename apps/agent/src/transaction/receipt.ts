import { buildReceiptPayload, type Digest, type MemberVerdict, type ReceiptMember, type ReceiptPayload } from '@svc/release-core';
import type { DriverFacts } from '../drivers/driver.js';
import type { TxData } from '../journal/record.js';
import type { PlannedMember } from './members.js';

/** What the journal knows about one member (stored under `member:<component>`). */
export interface MemberRecord {
  /** Activation was started: it must be rolled back on failure. */
  attempted: boolean;
  /** Activation returned. */
  activated: boolean;
  previous_digest: Digest | null;
  resulting_digest: Digest | null;
  verdict: MemberVerdict;
  facts: DriverFacts;
}

export interface DesiredState {
  /** signed: a verified release; legacy: a rollout without a release pointer (spec 2.2.3). */
  kind: 'signed' | 'legacy';
  tenant: string;
  release: { product: string; version: string; payload_digest: Digest; envelope_digest: Digest };
  transaction: { id: string; member_count: number };
  members: PlannedMember[];
  health: unknown;
}

export interface DeviceIdentity {
  name: string;
  /** DER of the identity certificate used on the mTLS connection. */
  certificateDer: Uint8Array;
}

export function memberRecord(data: TxData, component: string): MemberRecord {
  const r = data[`member:${component}`] as MemberRecord | undefined;
  return r ?? { attempted: false, activated: false, previous_digest: null, resulting_digest: null, verdict: 'not-attempted', facts: {} };
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
 * digests and verdict, and for an os-bundle the A/B tool's facts. release-core's
 * buildReceiptPayload shapes it (one component or a transaction).
 */
export function buildReceipt(args: {
  desired: DesiredState;
  data: TxData;
  device: DeviceIdentity;
  activation: 'activated' | 'rolled-back' | 'failed';
  health: 'healthy' | 'unhealthy' | 'not-checked';
  now: Date;
}): ReceiptPayload {
  const { desired, data } = args;
  const records = desired.members.map((m) => ({ m, r: memberRecord(data, m.component) }));
  // The A/B tool's fields exist once it installed something; a bundle refused before
  // install has no slot story to tell (the receipt's activation says "failed").
  const os = desired.transaction.member_count === 1 ? records.find(({ m, r }) => m.kind === 'os-bundle' && typeof r.facts.installed_slot === 'string') : undefined;
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
