import { COMPONENT_KINDS, transactionMembers, type ReleasePayload } from '@svc/release-core';
import { AgentError } from '../errors.js';
import type { PlannedMember } from '../journal/tx-data.js';
import type { SignedAssignment } from './assignment.js';

export type MemberPlan = { status: 'complete'; members: PlannedMember[] } | { status: 'waiting'; missing: string[] };

/**
 * spec §3 rule 4: every member must come from the same signed release and the complete set must
 * be present before anything is downloaded. A set that can never become complete (wrong
 * count, unknown component, wrong group or position) is refused; a short one waits.
 */
export function planMembers(payload: ReleasePayload, a: SignedAssignment): MemberPlan {
  const signed = transactionMembers(payload);
  const field = (f: string) => ({ field: f });
  // spec §3 rule 3: assignment metadata carries the full member count
  if (a.memberCount !== signed.length) {
    throw new AgentError('MEMBER_SET_MISMATCH', `member_count ${a.memberCount} but the signed release has ${signed.length} components`, field('member_count'));
  }
  if (a.members.length > a.memberCount) {
    throw new AgentError('MEMBER_SET_MISMATCH', `${a.members.length} members assigned, member_count is ${a.memberCount}`, field('members'));
  }
  const byName = new Map(a.members.map((m) => [m.component, m]));
  if (byName.size !== a.members.length) {
    throw new AgentError('MEMBER_SET_MISMATCH', 'a component is assigned twice', field('members'));
  }
  for (const m of a.members) {
    const s = signed.find((x) => x.component === m.component);
    if (s === undefined) {
      throw new AgentError('MEMBER_SET_MISMATCH', `component ${m.component} is not in the signed release`, field(`members.${m.component}`));
    }
    if (s.group !== m.group || s.position !== m.position) {
      throw new AgentError(
        'MEMBER_SET_MISMATCH',
        `component ${m.component} assigned group ${m.group} position ${m.position}, signed group ${s.group} position ${s.position}`,
        field(`members.${m.component}.position`),
      );
    }
  }
  const missing = signed.filter((s) => !byName.has(s.component)).map((s) => s.component);
  if (missing.length > 0) return { status: 'waiting', missing };
  const members = signed.map((s): PlannedMember => {
    const c = payload.components.find((x) => x.name === s.component)!;
    if (!(COMPONENT_KINDS as readonly string[]).includes(c.kind)) {
      throw new AgentError('MEMBER_KIND_UNSUPPORTED', `component ${c.name} has kind ${c.kind}, not installable`, field(`components.${c.name}.kind`));
    }
    return {
      component: c.name,
      kind: c.kind,
      rolloutId: byName.get(c.name)!.rolloutId,
      target: c.target,
      digest: c.digest,
      length: c.length,
      mediaType: c.media_type,
      ...(c.placement !== undefined ? { placement: c.placement.path } : {}),
      ...(c.placement !== undefined && (c.placement.mode ?? c.placement.owner ?? c.placement.group) !== undefined
        ? {
            access: {
              ...(c.placement.mode !== undefined ? { mode: c.placement.mode } : {}),
              ...(c.placement.owner !== undefined ? { owner: c.placement.owner } : {}),
              ...(c.placement.group !== undefined ? { group: c.placement.group } : {}),
            },
          }
        : {}),
      group: s.group,
      position: s.position,
    };
  });
  return { status: 'complete', members: members.sort((x, y) => x.position - y.position) };
}
