import { IDENTIFIER_PATTERNS, LIMITS, MEMBER_KINDS, isDigest, type Digest, type MemberKind } from '@svc/release-core';
import { AgentError } from '../errors.js';

/** One member as the server assigned it (contracts §6: release transaction members). */
export interface AssignedMember {
  rolloutId: string;
  component: string;
  group: number;
  position: number;
}

/** A signed-release pointer with its transaction metadata (spec §3 rule 3). */
export interface SignedAssignment {
  kind: 'signed';
  transactionId: string;
  memberCount: number;
  members: AssignedMember[];
  /** The release envelope exactly as TUF delivered it (the published target bytes). */
  envelope: Uint8Array;
}

/** A legacy rollout: no release pointer, one artifact (spec §2.2 rule 3). */
export interface LegacyAssignment {
  kind: 'legacy';
  rolloutId: string;
  component: string;
  componentKind: MemberKind;
  target: string;
  digest: Digest;
  length: number;
  placement?: string;
}

export type Assignment = SignedAssignment | LegacyAssignment;

const { id: ID, componentName: NAME } = IDENTIFIER_PATTERNS;

/** Checks the shape the channel hands over; every bad field named at once. */
export function assertAssignment(a: Assignment): void {
  const issues: string[] = [];
  if (a.kind === 'signed') {
    if (!ID.test(a.transactionId)) issues.push('transaction_id: must be an id');
    if (!Number.isInteger(a.memberCount) || a.memberCount < 1 || a.memberCount > LIMITS.components)
      issues.push(`member_count: must be 1..${LIMITS.components}`);
    if (!Array.isArray(a.members) || a.members.length > LIMITS.components) issues.push(`members: at most ${LIMITS.components}`);
    else
      a.members.forEach((m, i) => {
        if (!ID.test(m.rolloutId)) issues.push(`members[${i}].rollout_id: must be an id`);
        if (!NAME.test(m.component)) issues.push(`members[${i}].component: must be a component name`);
        if (!Number.isInteger(m.group) || m.group < 0) issues.push(`members[${i}].group: must be an integer >= 0`);
        if (!Number.isInteger(m.position) || m.position < 0) issues.push(`members[${i}].position: must be an integer >= 0`);
      });
    // spec §5: bounded untrusted input before any parsing
    if (!(a.envelope instanceof Uint8Array) || a.envelope.length === 0 || a.envelope.length > LIMITS.releaseEnvelopeBytes) {
      issues.push(`envelope: must be 1..${LIMITS.releaseEnvelopeBytes} bytes`);
    }
  } else if (a.kind === 'legacy') {
    if (!ID.test(a.rolloutId)) issues.push('rollout_id: must be an id');
    if (!NAME.test(a.component)) issues.push('component: must be a component name');
    if (!(MEMBER_KINDS as readonly string[]).includes(a.componentKind)) issues.push('kind: unsupported for a legacy rollout');
    if (!isDigest(a.digest)) issues.push('digest: must be sha256:<64 hex>');
    if (!Number.isSafeInteger(a.length) || a.length < 0) issues.push('length: must be a byte count');
    if (typeof a.target !== 'string' || a.target === '' || a.target.length > 1024) issues.push('target: must be a target path');
  } else {
    issues.push('kind: must be "signed" or "legacy"');
  }
  if (issues.length > 0) {
    throw new AgentError('ASSIGNMENT_INVALID', `invalid assignment: ${issues.join('; ')}`, { field: issues[0]!.split(':')[0]! });
  }
}
