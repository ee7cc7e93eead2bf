import type { Digest } from '../digest.js';

export const RECEIPT_PAYLOAD_TYPE = 'svc.release-receipt.v1';

export type ActivationOutcome = 'activated' | 'rolled-back' | 'failed';
export type HealthVerdict = 'healthy' | 'unhealthy' | 'not-checked';
export type MemberVerdict = 'committed' | 'rolled-back' | 'failed' | 'not-attempted';

export interface ReceiptMember {
  group: number;
  position: number;
  component: string;
  rollout: string;
  candidate_digest: Digest;
  previous_digest: Digest | null;
  resulting_digest: Digest | null;
  verdict: MemberVerdict;
}

/** spec §2.3 rule 4: the A/B tool's view of an OS update */
export interface OsResult {
  compatible: string;
  bundle_version: string;
  manifest_hash: string;
  previous_slot: string;
  installed_slot: string;
  booted_slot: string | null;
  bootloader_primary: string;
  mark: 'good' | 'bad' | 'active' | 'none';
  phase: string;
}

/**
 * contracts §3. Single-component and OS receipts carry `rollout` and the three top-level
 * digests; a transaction receipt carries `transaction` and `members` instead (the digests
 * are per member), never both.
 */
export interface ReceiptPayload {
  tenant: string;
  device: { name: string; certificate: string };
  release: { product: string; version: string; payload_digest: Digest; envelope_digest: Digest };
  rollout?: string;
  candidate_digest?: Digest;
  previous_digest?: Digest | null;
  resulting_digest?: Digest | null;
  activation: ActivationOutcome;
  health: HealthVerdict;
  timestamp: string;
  transaction?: { id: string; member_count: number };
  members?: ReceiptMember[];
  os?: OsResult;
}
