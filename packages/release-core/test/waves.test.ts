import { describe, expect, it } from 'vitest';
import { LIMITS, type WaveSource, parseFailureThreshold, parseWaves, validateReleasePayload } from '../src/index.js';
import { loadVector, refusal } from './helpers/vectors.js';

interface Case {
  name: string;
  source: WaveSource;
  field: string;
  input: unknown;
  waves?: unknown;
  issues?: { path: string; message: string }[];
}
const vectors = loadVector('waves.json');
const payloads = loadVector('release-payloads.json');
const named = (list: Case[]) => list.map((c) => [c.name, c] as const);

describe('parseWaves (vectors/waves.json)', () => {
  it.each(named(vectors.waves.good))('%s', (_n, c) => {
    expect(parseWaves(c.input, c.field, c.source) ?? null).toEqual(c.waves);
  });

  it.each(named(vectors.waves.bad))('%s', (_n, c) => {
    const err = refusal(() => parseWaves(c.input, c.field, c.source));
    expect(err.code).toBe('WAVES_INVALID');
    expect(err.issues).toHaveLength(c.issues!.length);
    c.issues!.forEach((want, i) => {
      expect(err.issues[i]!.path).toBe(want.path);
      expect(err.issues[i]!.message).toContain(want.message);
    });
    // the message names the first bad field and how many more there are
    const more = c.issues!.length > 1 ? ` (and ${c.issues!.length - 1} more)` : '';
    expect(err.message).toBe(`${err.issues[0]!.path}: ${err.issues[0]!.message}${more}`);
  });

  it('a legacy rollout request takes up to legacyRolloutWaves waves', () => {
    const waves = (n: number) => Array.from({ length: n }, (_, i) => ({ count: i + 1 }));
    expect(parseWaves(waves(LIMITS.legacyRolloutWaves), 'waves', 'legacy-rollout')).toHaveLength(LIMITS.legacyRolloutWaves);
    expect(refusal(() => parseWaves(waves(LIMITS.legacyRolloutWaves + 1), 'waves', 'legacy-rollout')).message).toBe(
      `waves: has ${LIMITS.legacyRolloutWaves + 1} items, at most ${LIMITS.legacyRolloutWaves} allowed`,
    );
  });

  it('validateReleasePayload applies the same rule to rollout.waves', () => {
    for (const c of vectors.waves.bad.filter((b: Case) => b.source === 'release' && b.field === 'rollout.waves') as Case[]) {
      const payload = { ...payloads.good.single, rollout: { ...payloads.good.single.rollout, waves: c.input } };
      const err = refusal(() => validateReleasePayload(payload));
      expect(err.code).toBe('PAYLOAD_INVALID');
      expect(err.issues.map((i) => i.path)).toEqual(c.issues!.map((i) => i.path));
    }
    for (const c of vectors.waves.good.filter((g: Case) => g.source === 'release' && g.input !== null) as Case[]) {
      const payload = { ...payloads.good.single, rollout: { ...payloads.good.single.rollout, waves: c.input } };
      expect(() => validateReleasePayload(payload)).not.toThrow();
    }
  });
});

interface ThresholdCase {
  name: string;
  input: unknown;
  threshold?: unknown;
  issues?: { path: string; message: string }[];
}

describe('parseFailureThreshold (vectors/waves.json)', () => {
  const field: string = vectors.failure_threshold.field;
  const good: ThresholdCase[] = vectors.failure_threshold.good;
  const bad: ThresholdCase[] = vectors.failure_threshold.bad;
  it.each(good.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    expect(parseFailureThreshold(c.input, field) ?? null).toEqual(c.threshold);
  });
  it.each(bad.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const err = refusal(() => parseFailureThreshold(c.input, field));
    expect(err.code).toBe('WAVES_INVALID');
    expect(err.issues.map((i) => i.path)).toEqual(c.issues!.map((i) => i.path));
    c.issues!.forEach((want, i) => expect(err.issues[i]!.message).toContain(want.message));
  });
  it('validateReleasePayload applies the same rule to rollout.failure_threshold', () => {
    for (const c of bad) {
      const payload = { ...payloads.good.single, rollout: { ...payloads.good.single.rollout, failure_threshold: c.input } };
      expect(refusal(() => validateReleasePayload(payload)).issues.map((i) => i.path)).toEqual(c.issues!.map((i) => i.path));
    }
  });
});
