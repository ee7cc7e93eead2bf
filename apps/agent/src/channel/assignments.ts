import { AssignmentKind, type Assignment as WireAssignment } from '@svc/device-proto';
import { LIMITS, type Digest, type MemberKind } from '@svc/release-core';
import { AgentError } from '../errors.js';
import type { Assignment } from '../transaction/assignment.js';

/** Fetches a TUF target into memory (ChannelTargetFetcher.fetchBytes). */
export type FetchBytes = (targetPath: string, maxBytes: number) => Promise<Uint8Array>;

/**
 * A wire assignment -> the orchestrator's Assignment. For a signed release the envelope is
 * fetched through TUF (spec §2.2/3: the device verifies the exact published bytes itself);
 * a legacy pointer stays legacy (spec §2.2 rule 3).
 */
export async function toAgentAssignment(w: WireAssignment, fetchBytes: FetchBytes): Promise<Assignment> {
  if (w.kind === AssignmentKind.ASSIGNMENT_KIND_SIGNED) {
    if (w.release === undefined || w.transaction === undefined) {
      throw new AgentError('ASSIGNMENT_INVALID', `assignment ${w.rolloutId}: signed without release or transaction`, { field: 'release' });
    }
    const envelope = await fetchBytes(w.release.envelopeTarget, LIMITS.releaseEnvelopeBytes);
    return {
      kind: 'signed',
      transactionId: w.transaction.id,
      memberCount: w.transaction.memberCount,
      members: w.transaction.members.map((m) => ({ rolloutId: m.rolloutId, component: m.component, group: m.group, position: m.position })),
      envelope,
    };
  }
  if (w.kind === AssignmentKind.ASSIGNMENT_KIND_LEGACY && w.legacy !== undefined) {
    return {
      kind: 'legacy',
      rolloutId: w.rolloutId,
      component: w.legacy.name,
      componentKind: w.legacy.kind as MemberKind,
      target: w.legacy.target,
      digest: w.legacy.digest as Digest,
      length: w.legacy.length,
    };
  }
  throw new AgentError('ASSIGNMENT_INVALID', `assignment ${w.rolloutId}: unknown kind ${w.kind}`, { field: 'kind' });
}
