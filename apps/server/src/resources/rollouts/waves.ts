/**
 * Wave planning over a membership snapshot (spec §4 "rollout waves"; contracts §2 `rollout.waves`).
 *
 * A wave is `{name?, count | percent, requires_approval?}`, CUMULATIVE as release-core defines
 * it: the share of the group reached by the end of that wave, one unit for all waves, growing
 * strictly. The plan is a list of sizes whose sum is the group size, so every device lands in
 * exactly one wave. Devices are ranked by
 * sha256(seed + ":" + name) (seed = the deployment id): deterministic for one deployment, yet
 * two deployments of the same group do not always pick the same canaries. The database computes
 * the same ranking in SQL with `sha256` (queries.ts `insertWavesAndDevices`); `waveOfRank` is the shared rule.
 * Waves and failure thresholds are parsed by release-core's `parseWaves` / `parseFailureThreshold`.
 */
import type { FailureThreshold, Wave } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';

export interface PlannedWave {
  index: number;
  name: string;
  size: number;
  requires_approval: boolean;
}

/**
 * Sizes of each wave for `total` devices. A wave reaches ceil(total * p / 100) devices in all
 * (percent) or `count` (capped at the group size); its size is what that adds to the previous
 * waves. Devices left after the declared waves form a final wave "rest" that is gated by
 * approval when any declared wave is gated - an operator who asked for gates never gets the
 * remainder of the fleet ungated.
 */
export function planWaves(total: number, specs: Wave[] | undefined): PlannedWave[] {
  if (!specs || specs.length === 0) return [{ index: 0, name: 'all', size: total, requires_approval: false }];
  const plan: PlannedWave[] = [];
  let reached = 0;
  specs.forEach((s, i) => {
    const cumulative = Math.min(total, s.count ?? Math.ceil((total * (s.percent ?? 0)) / 100));
    const size = Math.max(0, cumulative - reached);
    reached += size;
    plan.push({ index: i, name: s.name ?? `wave-${i + 1}`, size, requires_approval: s.requires_approval === true });
  });
  const remaining = total - reached;
  if (remaining > 0) {
    plan.push({ index: specs.length, name: 'rest', size: remaining, requires_approval: specs.some((s) => s.requires_approval === true) });
  }
  return plan;
}

/** Upper rank bound (exclusive, 1-based ranks) of each wave: rank r is in the first wave with r <= bound. */
export function waveBounds(plan: PlannedWave[]): number[] {
  let acc = 0;
  return plan.map((w) => (acc += w.size));
}

/** The wave of a 1-based rank: the same rule the SQL CASE expression applies. */
export function waveOfRank(rank: number, bounds: number[]): number {
  const i = bounds.findIndex((b) => rank <= b);
  if (i < 0) throw new ServerError('WAVES_INVALID', `rank ${rank} is beyond the planned waves`);
  return i;
}

/** True when `failed` failures among `size` devices exceed the threshold (strictly more than allowed). */
export function thresholdExceeded(t: FailureThreshold | undefined, failed: number, size: number): boolean {
  if (!t || failed === 0) return false;
  if (t.count !== undefined && failed > t.count) return true;
  if (t.percent !== undefined && size > 0 && (failed * 100) / size > t.percent) return true;
  return false;
}

/**
 * Overrides at rollout start may only tighten the signed constraints (spec §4: the signed
 * release is the authority): add approval gates, lower the failure threshold, never loosen.
 */
export function applyOverrides(
  signed: { waves: Wave[] | undefined; threshold: FailureThreshold | undefined },
  overrides: { require_approval?: number[]; failure_threshold?: FailureThreshold } | undefined,
  waveCount: number,
): { gated: Set<number>; threshold: FailureThreshold | undefined } {
  const gated = new Set<number>();
  for (const [i, w] of (signed.waves ?? []).entries()) if (w.requires_approval) gated.add(i);
  let threshold = signed.threshold;
  if (!overrides) return { gated, threshold };
  for (const [k, i] of (overrides.require_approval ?? []).entries()) {
    if (!Number.isInteger(i) || i < 0 || i >= waveCount) {
      throw new ServerError('OVERRIDE_LOOSENS', `overrides.require_approval[${k}]: no wave ${i} (the plan has ${waveCount})`);
    }
    gated.add(i);
  }
  const o = overrides.failure_threshold;
  if (o) {
    const s = signed.threshold;
    // a missing signed bound is "no limit": any number tightens it
    if (s?.count !== undefined && (o.count === undefined || o.count > s.count)) {
      throw new ServerError('OVERRIDE_LOOSENS', `overrides.failure_threshold.count: must be <= the signed ${s.count}`);
    }
    if (s?.percent !== undefined && (o.percent === undefined || o.percent > s.percent)) {
      throw new ServerError('OVERRIDE_LOOSENS', `overrides.failure_threshold.percent: must be <= the signed ${s.percent}`);
    }
    threshold = o;
  }
  return { gated, threshold };
}
