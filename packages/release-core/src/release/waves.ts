import { ReleaseError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { Checker, describe, join } from '../schema/checker.js';
import type { FailureThreshold, Wave } from './types.js';

/*
 * Rollout waves (contracts §2 `rollout.waves`, README "Release payload shapes"): the one parser
 * behind validateReleasePayload and every other reader of waves. A wave is
 * `{name?, count | percent, requires_approval?}` and waves are CUMULATIVE: each is the share of
 * the target group reached by its end, in one unit for all waves, growing strictly.
 */

/**
 * Where a wave list comes from sets its bounds. `release`: a signed release payload (whole
 * percents, LIMITS.waves). `legacy-rollout`: an operator's legacy rollout request, which has no
 * signed release behind it and has always taken fractional percents, unnamed waves with an empty
 * name and up to LIMITS.legacyRolloutWaves waves.
 */
export type WaveSource = 'release' | 'legacy-rollout';

const RULES: Record<WaveSource, { maxWaves: number; wholePercent: boolean; minNameLength: number }> = {
  release: { maxWaves: LIMITS.waves, wholePercent: true, minNameLength: 1 },
  'legacy-rollout': { maxWaves: LIMITS.legacyRolloutWaves, wholePercent: false, minNameLength: 0 },
};

/** Records every problem of a wave list in `c`; returns the waves normalized, or undefined. */
export function checkWaves(c: Checker, value: unknown, path: string, source: WaveSource = 'release'): Wave[] | undefined {
  const rules = RULES[source];
  if (!Array.isArray(value)) {
    c.add(path, `must be an array of waves, got ${describe(value)}`);
    return undefined;
  }
  const list = c.array(value, path, 1, rules.maxWaves);
  if (!list) return undefined;
  const before = c.issues.length;
  const waves: Wave[] = [];
  let unit: 'percent' | 'count' | undefined;
  let last = 0;
  list.forEach((w, i) => {
    const at = `${path}[${i}]`;
    const o = c.object(w, at, [], ['name', 'percent', 'count', 'requires_approval']);
    if (!o) return;
    const name = o.name === undefined ? undefined : c.string(o.name, join(at, 'name'), { max: 64, min: rules.minNameLength });
    if (o.requires_approval !== undefined) c.boolean(o.requires_approval, join(at, 'requires_approval'));
    const has = (['percent', 'count'] as const).filter((k) => o[k] !== undefined);
    // one sizing rule per wave, so the plan never depends on which key wins
    if (has.length !== 1) {
      c.add(at, 'give exactly one of "count" or "percent"');
      return;
    }
    const k = has[0]!;
    const n = k === 'count' ? c.integer(o.count, join(at, 'count'), 1) : percent(c, o.percent, join(at, 'percent'), rules.wholePercent);
    if (unit !== undefined && k !== unit) c.add(join(at, k), `all waves must use "${unit}"`);
    else if (n !== undefined && n <= last) c.add(join(at, k), `${n} does not grow past the previous wave (${last}); waves are cumulative`);
    unit = k;
    if (n === undefined) return;
    last = n;
    const wave: Wave = {};
    if (name !== undefined) wave.name = name;
    wave[k] = n;
    if (o.requires_approval === true) wave.requires_approval = true;
    waves.push(wave);
  });
  return c.issues.length === before ? waves : undefined;
}

function percent(c: Checker, value: unknown, path: string, whole: boolean): number | undefined {
  if (whole) return c.integer(value, path, 1, 100);
  if (typeof value !== 'number' || !(value > 0 && value <= 100)) {
    c.add(path, `must be a number in (0, 100], got ${describe(value)}`);
    return undefined;
  }
  return value;
}

/** `rollout.failure_threshold`: `{percent?: 0..100, count?: >= 0}`, at least one of them. */
export function checkFailureThreshold(c: Checker, value: unknown, path: string): FailureThreshold | undefined {
  const f = c.object(value, path, [], ['percent', 'count']);
  if (!f) return undefined;
  if (f.percent === undefined && f.count === undefined) {
    c.add(path, 'give count or percent');
    return undefined;
  }
  const before = c.issues.length;
  const t: FailureThreshold = {};
  const pct = f.percent === undefined ? undefined : c.integer(f.percent, join(path, 'percent'), 0, 100);
  const count = f.count === undefined ? undefined : c.integer(f.count, join(path, 'count'), 0);
  if (pct !== undefined) t.percent = pct;
  if (count !== undefined) t.count = count;
  return c.issues.length === before ? t : undefined;
}

function refuse(c: Checker): never {
  const first = c.issues[0]!;
  const more = c.issues.length > 1 ? ` (and ${c.issues.length - 1} more)` : '';
  throw new ReleaseError('WAVES_INVALID', `${first.path}: ${first.message}${more}`, { issues: c.issues });
}

/**
 * Parses an untrusted wave list, naming every bad field at once (WAVES_INVALID, the message
 * quoting the first). `undefined` and `null` mean "no waves": one wave of the whole group.
 * The result keeps only what a plan reads: `name` when given, the one size key, and
 * `requires_approval` only when true.
 */
export function parseWaves(value: unknown, field: string, source: WaveSource = 'release'): Wave[] | undefined {
  if (value === undefined || value === null) return undefined;
  const c = new Checker();
  const waves = checkWaves(c, value, field, source);
  if (waves === undefined || c.issues.length > 0) refuse(c);
  return waves;
}

/** Parses an untrusted `failure_threshold` (WAVES_INVALID naming the field); null or undefined: none. */
export function parseFailureThreshold(value: unknown, field: string): FailureThreshold | undefined {
  if (value === undefined || value === null) return undefined;
  const c = new Checker();
  const t = checkFailureThreshold(c, value, field);
  if (t === undefined || c.issues.length > 0) refuse(c);
  return t;
}
