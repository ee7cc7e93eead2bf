import type { DesiredState, MemberRecord, PlannedMember } from '../journal/tx-data.js';
import type { State } from '../state-machine/states.js';
import type { LegacyAssignment } from './assignment.js';

/**
 * spec §2.2 rule 3: legacy rollouts (no release pointer) keep running during migration and stay
 * distinguishable from signed-release work. They go through the same journal, staging and
 * drivers, but nothing about them is customer-authorized, so their report is a plain
 * status document, never a svc.release-receipt.v1.
 */
export function legacyDesiredState(a: LegacyAssignment): DesiredState {
  const member: PlannedMember = {
    component: a.component,
    kind: a.componentKind,
    rolloutId: a.rolloutId,
    target: a.target,
    digest: a.digest,
    length: a.length,
    mediaType: 'application/octet-stream',
    ...(a.placement ? { placement: a.placement } : {}),
    group: 0,
    position: 0,
  };
  return {
    kind: 'legacy',
    tenant: '',
    release: null, // no signed release: nothing here is customer-authorized
    transaction: { id: `legacy:${a.rolloutId}`, member_count: 1 },
    members: [member],
    health: { probes: [] },
  };
}

export const LEGACY_STATUS_TYPE = 'svc.legacy-status';

/** The device-reported (unsigned) status of a legacy rollout. */
export function legacyStatus(m: PlannedMember, r: MemberRecord, state: State, device: string, error: string | null, now: Date): Record<string, unknown> {
  return {
    type: LEGACY_STATUS_TYPE,
    rollout: m.rolloutId,
    device,
    component: m.component,
    status: state === 'committed' ? 'installed' : state === 'rolled-back' ? 'rolled-back' : 'failed',
    candidate_digest: m.digest,
    previous_digest: r.previous_digest,
    error,
    timestamp: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
}
