import { toBase64 } from '../encoding/bytes.js';
import type { ActivationOutcome, HealthVerdict, OsResult, ReceiptMember, ReceiptPayload } from './types.js';
import { validateReceiptPayload } from './validate.js';

/** What the device knows when a transaction ends; buildReceiptPayload shapes it per contracts §3. */
export interface ReceiptFacts {
  tenant: string;
  /** `certificateDer`: the identity certificate of the device's mTLS connection (spec §2.3 rule 5). */
  device: { name: string; certificateDer: Uint8Array };
  release: ReceiptPayload['release'];
  transaction: { id: string; member_count: number };
  /** Every member of the transaction with its outcome, in any order. */
  members: readonly ReceiptMember[];
  activation: ActivationOutcome;
  health: HealthVerdict;
  /**
   * os-bundle only: the A/B tool's facts. A field not reported is written as null (`mark`:
   * "none"), and validation then names what an OS result lacks.
   */
  os?: Readonly<Partial<Record<keyof OsResult, string | number | boolean | null>>>;
  now: Date;
}

const OS_FIELDS = [
  'compatible',
  'bundle_version',
  'manifest_hash',
  'previous_slot',
  'installed_slot',
  'booted_slot',
  'bootloader_primary',
  'mark',
  'phase',
] as const;

/**
 * The `svc.release-receipt.v1` payload of a finished transaction (contracts §3), pure: no clock
 * read, no I/O. A single-component release gets `rollout` and the three digests at the top level
 * (plus `os` for an OS bundle); a transaction gets `transaction` and `members` ordered by
 * position, each with its own digests and verdict, and no top-level digests. The timestamp is
 * RFC 3339 UTC to the second. The result is validated (RECEIPT_INVALID naming every bad field),
 * so what signReceipt is given is already a receipt.
 */
export function buildReceiptPayload(facts: ReceiptFacts): ReceiptPayload {
  const members = [...facts.members].sort((a, b) => a.position - b.position);
  const base = {
    tenant: facts.tenant,
    device: { name: facts.device.name, certificate: toBase64(facts.device.certificateDer) },
    release: { ...facts.release },
    activation: facts.activation,
    health: facts.health,
    timestamp: facts.now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
  if (facts.transaction.member_count !== 1) {
    return validateReceiptPayload({ ...base, transaction: { ...facts.transaction }, members: members.map((m) => ({ ...m })) });
  }
  const only = members[0];
  if (only === undefined || members.length !== 1)
    throw new TypeError(`buildReceiptPayload: a single-component receipt needs exactly one member, got ${members.length}`);
  const single = {
    ...base,
    rollout: only.rollout,
    candidate_digest: only.candidate_digest,
    previous_digest: only.previous_digest,
    resulting_digest: only.resulting_digest,
  };
  return validateReceiptPayload(facts.os === undefined ? single : { ...single, os: osResult(facts.os) });
}

function osResult(os: NonNullable<ReceiptFacts['os']>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of OS_FIELDS) out[f] = os[f] ?? null;
  out.mark ??= 'none';
  return out;
}
