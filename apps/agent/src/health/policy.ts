import { checkHealthPolicy, type HealthPolicy as SignedHealthPolicy, type HealthProbe } from '@svc/release-core';
import { AgentError } from '../errors.js';

/** A probe as the agent runs it: an http probe's expected status defaults to 200. */
export type Probe = Exclude<HealthProbe, { type: 'http' }> | (Extract<HealthProbe, { type: 'http' }> & { expect_status: number });

export interface HealthPolicy {
  probes: Probe[];
}

/**
 * The release's `health` object (release-core's shape and bounds, the same rule the
 * signature check applied) as probes to run, naming every bad field at once. The release
 * was signature-checked, but the device still bounds what it will run; `groups` is the
 * number of activation groups a probe's `group` must fall within.
 */
export function parseHealthPolicy(value: unknown, opts: { groups?: number } = {}): HealthPolicy {
  const issues = checkHealthPolicy(value, opts.groups ?? Number.MAX_SAFE_INTEGER);
  if (issues.length > 0) {
    const [first] = issues;
    throw new AgentError('HEALTH_POLICY_INVALID', `invalid health policy: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, {
      field: first!.path,
    });
  }
  const probes = (value as SignedHealthPolicy).probes.map((p): Probe => (p.type === 'http' ? { ...p, expect_status: p.expect_status ?? 200 } : p));
  return { probes };
}

/**
 * The probes checked after activation group `group`: those without a group, and those of this
 * group or an earlier one. A probe starts once its group is live and keeps running after every
 * later group, so the check before commit covers every probe of the release.
 */
export function probesForGroup(policy: HealthPolicy, group: number): HealthPolicy {
  return { probes: policy.probes.filter((p) => p.group === undefined || p.group <= group) };
}
