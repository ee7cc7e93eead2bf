import { AgentError } from '../errors.js';

/** `group`: the activation group the probe belongs to; absent, it belongs to every group. */
export type Probe =
  | { name: string; type: 'command'; command: string[]; timeout_s: number; group?: number }
  | { name: string; type: 'http'; url: string; expect_status: number; timeout_s: number; group?: number };

export interface HealthPolicy {
  probes: Probe[];
}

const MAX_PROBES = 32;
const MAX_TIMEOUT_S = 600;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * Validates the release's `health` object (contracts §2) into probes, naming every bad field
 * at once. The release was signature-checked, but the device still bounds what it will run.
 * Shape: release-core's `HealthPolicy` (`{probes: [...], timeout_s?}`); `groups` is the
 * number of activation groups a probe's `group` must fall within.
 */
export function parseHealthPolicy(value: unknown, opts: { groups?: number } = {}): HealthPolicy {
  const issues: string[] = [];
  const obj = value as { probes?: unknown } | null;
  if (typeof obj !== 'object' || obj === null) {
    throw new AgentError('HEALTH_POLICY_INVALID', 'health: must be an object', { field: 'health' });
  }
  const raw = obj.probes ?? [];
  if (!Array.isArray(raw) || raw.length > MAX_PROBES) {
    throw new AgentError('HEALTH_POLICY_INVALID', `health.probes: must be an array of at most ${MAX_PROBES}`, { field: 'health.probes' });
  }
  const names = new Set<string>();
  const probes: Probe[] = [];
  raw.forEach((p: unknown, i) => {
    const at = `health.probes[${i}]`;
    const r = (typeof p === 'object' && p !== null ? p : {}) as Record<string, unknown>;
    if (typeof r.name !== 'string' || !NAME.test(r.name)) issues.push(`${at}.name: must match ${NAME.source}`);
    else if (names.has(r.name)) issues.push(`${at}.name: duplicate ${r.name}`);
    else names.add(r.name);
    const t = r.timeout_s;
    if (typeof t !== 'number' || !(t > 0) || t > MAX_TIMEOUT_S) issues.push(`${at}.timeout_s: must be a number in (0, ${MAX_TIMEOUT_S}]`);
    const g = r.group;
    const maxGroup = (opts.groups ?? Number.MAX_SAFE_INTEGER) - 1;
    if (g !== undefined && (typeof g !== 'number' || !Number.isInteger(g) || g < 0 || g > maxGroup)) {
      issues.push(`${at}.group: must be an activation group index 0..${maxGroup}`);
    }
    const base = { name: String(r.name), timeout_s: Number(t), ...(typeof g === 'number' ? { group: g } : {}) };
    if (r.type === 'command') {
      const cmd = r.command;
      if (!Array.isArray(cmd) || cmd.length === 0 || cmd.length > 64 || !cmd.every((a) => typeof a === 'string' && a.length <= 4096)) {
        issues.push(`${at}.command: must be a non-empty argv array of strings`);
      } else probes.push({ ...base, type: 'command', command: cmd as string[] });
    } else if (r.type === 'http') {
      let ok = typeof r.url === 'string';
      if (ok) {
        try {
          const u = new URL(r.url as string);
          ok = u.protocol === 'http:' || u.protocol === 'https:';
        } catch {
          ok = false;
        }
      }
      if (!ok) issues.push(`${at}.url: must be an http(s) URL`);
      const s = r.expect_status ?? 200;
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 100 || s > 599) issues.push(`${at}.expect_status: must be an HTTP status`);
      if (ok && typeof s === 'number') probes.push({ ...base, type: 'http', url: r.url as string, expect_status: s });
    } else {
      issues.push(`${at}.type: must be "command" or "http"`);
    }
  });
  if (issues.length > 0) {
    throw new AgentError('HEALTH_POLICY_INVALID', `invalid health policy: ${issues.join('; ')}`, { field: issues[0]!.split(':')[0]! });
  }
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
