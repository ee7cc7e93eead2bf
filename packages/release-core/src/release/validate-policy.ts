import { IDENTIFIER_PATTERNS } from '../identifiers.js';
import type { Issue } from '../errors.js';
import { Checker, describe, join } from '../schema/checker.js';
import { LIMITS as L } from '../limits.js';
import { checkFailureThreshold, checkWaves } from './waves.js';

/*
 * The policy parts of svc.release.v1 whose shape the spec leaves open (spec §2.1 "health
 * policy", "rollout constraints", "approval references", "related attestation digests",
 * "recovery behavior", "a validity window"). Shapes are documented in the package README.
 */

const PROBE_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/**
 * The release's `health` object checked on its own (a device bounds what it will run even
 * from a signed release): every bad field, or none. `groups`: the release's activation groups.
 */
export function checkHealthPolicy(value: unknown, groups: number): Issue[] {
  const c = new Checker();
  checkHealth(c, value, 'health', groups);
  return c.issues;
}

/** `groups`: how many activation groups the release has (a probe's `group` indexes them). */
export function checkHealth(c: Checker, value: unknown, path: string, groups: number): void {
  const h = c.object(value, path, ['probes'], ['timeout_s']);
  if (!h) return;
  if (h.timeout_s !== undefined) c.integer(h.timeout_s, join(path, 'timeout_s'), 1, L.probeTimeoutSeconds * L.probes);
  const probes = c.array(h.probes, join(path, 'probes'), 0, L.probes);
  const names = new Set<string>();
  probes?.forEach((p, i) => {
    const at = `${path}.probes[${i}]`;
    const type = (p as { type?: unknown } | null)?.type;
    const probe =
      type === 'command'
        ? c.object(p, at, ['name', 'type', 'command', 'timeout_s'], ['group'])
        : type === 'http'
          ? c.object(p, at, ['name', 'type', 'url', 'timeout_s'], ['expect_status', 'group'])
          : (c.object(p, at, ['name', 'type', 'timeout_s'], ['command', 'url', 'expect_status', 'group']), undefined);
    if (type !== 'command' && type !== 'http') c.add(join(at, 'type'), `${describe(type)} is not one of "command", "http"`);
    if (!probe) return;
    const name = c.string(probe.name, join(at, 'name'), { pattern: PROBE_NAME, what: 'probe name' });
    if (name !== undefined) {
      if (names.has(name)) c.add(join(at, 'name'), `duplicate probe name ${JSON.stringify(name)}`);
      names.add(name);
    }
    c.integer(probe.timeout_s, join(at, 'timeout_s'), 1, L.probeTimeoutSeconds);
    if (probe.group !== undefined) c.integer(probe.group, join(at, 'group'), 0, Math.max(0, groups - 1));
    if (type === 'command') {
      const args = c.array(probe.command, join(at, 'command'), 1, L.commandArgs);
      args?.forEach((a, j) => c.string(a, `${at}.command[${j}]`, { max: 1024 }));
    } else {
      const url = c.string(probe.url, join(at, 'url'), { max: 2048, pattern: /^https?:\/\/[^\s]+$/, what: 'http(s) URL' });
      if (url !== undefined && !URL.canParse(url)) c.add(join(at, 'url'), `${JSON.stringify(url)} is not a valid URL`);
      if (probe.expect_status !== undefined) c.integer(probe.expect_status, join(at, 'expect_status'), 100, 599);
    }
  });
}

export function checkRollout(c: Checker, value: unknown, path: string): void {
  const r = c.object(value, path, ['target_group', 'target_policy_digest'], ['waves', 'failure_threshold']);
  if (!r) return;
  c.string(r.target_group, join(path, 'target_group'), { pattern: IDENTIFIER_PATTERNS.id, max: 128, what: 'group id' });
  // spec §2.1: must equal the SHA-256 value of the target group's static membership snapshot
  c.digest(r.target_policy_digest, join(path, 'target_policy_digest'));
  if (r.waves !== undefined) checkWaves(c, r.waves, join(path, 'waves'));
  if (r.failure_threshold !== undefined) checkFailureThreshold(c, r.failure_threshold, join(path, 'failure_threshold'));
}

export function checkApprovals(c: Checker, value: unknown, path: string): void {
  c.array(value, path, 0, L.approvals)?.forEach((a, i) => {
    const at = `${path}[${i}]`;
    const o = c.object(a, at, ['system', 'ref'], ['digest']);
    if (!o) return;
    c.string(o.system, join(at, 'system'), { max: 64 });
    c.string(o.ref, join(at, 'ref'), { max: 512 });
    if (o.digest !== undefined) c.digest(o.digest, join(at, 'digest'));
  });
}

export function checkAttestations(c: Checker, value: unknown, path: string): void {
  c.array(value, path, 0, L.attestations)?.forEach((a, i) => {
    const at = `${path}[${i}]`;
    const o = c.object(a, at, ['predicate_type', 'digest']);
    if (!o) return;
    c.string(o.predicate_type, join(at, 'predicate_type'), { max: 256 });
    c.digest(o.digest, join(at, 'digest'));
  });
}

export function checkRecovery(c: Checker, value: unknown, path: string): { on_failure?: string; rollback_boundary?: string } {
  const r = c.object(value, path, ['on_failure', 'rollback_boundary']);
  if (!r) return {};
  return {
    on_failure: c.oneOf(r.on_failure, join(path, 'on_failure'), ['rollback', 'halt'] as const),
    rollback_boundary: c.oneOf(r.rollback_boundary, join(path, 'rollback_boundary'), ['release', 'component'] as const),
  };
}

export function checkValidity(c: Checker, value: unknown, path: string): void {
  const v = c.object(value, path, ['not_before', 'not_after', 'max_offline_age_s']);
  if (!v) return;
  const nb = c.timestamp(v.not_before, join(path, 'not_before'));
  const na = c.timestamp(v.not_after, join(path, 'not_after'));
  if (nb && na && !(nb.getTime() < na.getTime())) c.add(join(path, 'not_after'), 'must be later than not_before');
  c.integer(v.max_offline_age_s, join(path, 'max_offline_age_s'), 1, L.maxOfflineAgeSeconds);
}
