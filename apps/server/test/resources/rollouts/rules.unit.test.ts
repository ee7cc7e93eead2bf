import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { extract } from 'tar-stream';
import { Readable } from 'node:stream';
import { parseFailureThreshold, parseWaves } from '@svc/release-core';
import { applyOverrides, planWaves, thresholdExceeded, waveBounds, waveOfRank } from '../../../src/resources/rollouts/waves.js';
import { advance, approve, initialWaves, recordResult, resume } from '../../../src/resources/rollouts/progression.js';
import { deviceStateFromActivation, emptyCounts, transactionState } from '../../../src/resources/rollouts/states.js';
import { receiptExportStream, type ExportRow } from '../../../src/resources/release-receipts/export.js';
import { ServerError } from '../../../src/errors/server-error.js';

describe('wave planning', () => {
  it('splits counts and percents, remainder into a gated rest wave when any wave is gated', () => {
    const plan = planWaves(100, [{ count: 1 }, { count: 11, requires_approval: true }]);
    expect(plan.map((w) => [w.name, w.size, w.requires_approval])).toEqual([
      ['wave-1', 1, false],
      ['wave-2', 10, true],
      ['rest', 89, true],
    ]);
    expect(waveBounds(plan)).toEqual([1, 11, 100]);
    expect(waveOfRank(1, [1, 11, 100])).toBe(0);
    expect(waveOfRank(2, [1, 11, 100])).toBe(1);
    expect(waveOfRank(100, [1, 11, 100])).toBe(2);
    expect(() => waveOfRank(101, [1, 11, 100])).toThrow(ServerError);
  });

  it('no waves: one wave of everyone; small groups cap sizes and keep every device exactly once', () => {
    expect(planWaves(7, undefined)).toEqual([{ index: 0, name: 'all', size: 7, requires_approval: false }]);
    const plan = planWaves(3, [{ count: 2 }, { count: 3 }, { count: 5 }]);
    expect(plan.map((w) => w.size)).toEqual([2, 1, 0]);
    // percents are cumulative shares of the group
    expect(planWaves(10, [{ percent: 10 }, { percent: 50 }, { percent: 100 }]).map((w) => w.size)).toEqual([1, 4, 5]);
    expect(planWaves(10, [{ percent: 10 }, { percent: 50 }]).map((w) => [w.name, w.size])).toEqual([
      ['wave-1', 1],
      ['wave-2', 4],
      ['rest', 5],
    ]);
    expect(plan.reduce((a, w) => a + w.size, 0)).toBe(3);
  });

  it('refuses malformed waves naming the field', () => {
    expect(() => parseWaves([{ count: 1, percent: 5 }], 'rollout.waves')).toThrow(/rollout.waves\[0\]: give exactly one/);
    expect(() => parseWaves([{ count: 0 }], 'rollout.waves')).toThrow(/rollout.waves\[0\].count/);
    expect(() => parseWaves([{ percent: 101 }], 'w')).toThrow(/w\[0\].percent/);
    expect(() => parseWaves({}, 'w')).toThrow(/w: must be an array/);
    expect(() => parseWaves([{ count: 1, requires_approval: 'yes' }], 'w')).toThrow(/requires_approval/);
    expect(() => parseWaves([{ count: 2 }, { count: 2 }], 'w')).toThrow(/w\[1\].count: 2 does not grow/);
    expect(() => parseWaves([{ count: 2 }, { percent: 50 }], 'w')).toThrow(/w\[1\].percent: all waves must use "count"/);
    expect(parseWaves([{ percent: 5, requires_approval: true, name: 'canary' }], 'w')).toEqual([{ name: 'canary', percent: 5, requires_approval: true }]);
    expect(() => parseFailureThreshold({}, 'rollout.failure_threshold')).toThrow(/give count or percent/);
  });

  it('thresholds count strictly more than allowed', () => {
    expect(thresholdExceeded({ count: 1 }, 1, 10)).toBe(false);
    expect(thresholdExceeded({ count: 1 }, 2, 10)).toBe(true);
    expect(thresholdExceeded({ percent: 10 }, 1, 10)).toBe(false);
    expect(thresholdExceeded({ percent: 10 }, 2, 10)).toBe(true);
    expect(thresholdExceeded(undefined, 10, 10)).toBe(false);
  });

  it('overrides may tighten but never loosen', () => {
    const signed = { waves: [{ count: 1, requires_approval: true }, { count: 5 }], threshold: { count: 2 } };
    const r = applyOverrides(signed, { require_approval: [1], failure_threshold: { count: 1 } }, 3);
    expect([...r.gated].sort()).toEqual([0, 1]);
    expect(r.threshold).toEqual({ count: 1 });
    expect(() => applyOverrides(signed, { failure_threshold: { count: 3 } }, 3)).toThrow(/must be <= the signed 2/);
    expect(() => applyOverrides(signed, { failure_threshold: { percent: 1 } }, 3)).toThrow(/count: must be <=/);
    expect(() => applyOverrides(signed, { require_approval: [7] }, 3)).toThrow(/no wave 7/);
  });

  it('the SQL ranking rule equals sha256(seed:name) order', () => {
    // mirrors rollout-start.ts: rank devices by the hex of sha256(seed || ':' || name)
    const seed = '6f1c7c2e-0000-4000-8000-000000000000';
    const names = ['a', 'b', 'c', 'd'];
    const key = (n: string) => createHash('sha256').update(`${seed}:${n}`).digest('hex');
    const ranked = [...names].sort((x, y) => (key(x) < key(y) ? -1 : 1));
    expect(new Set(ranked)).toEqual(new Set(names));
  });
});

describe('wave progression', () => {
  const rows = planWaves(4, [{ count: 1 }, { count: 2, requires_approval: true }]).map((w) => ({
    index: w.index,
    size: w.size,
    requires_approval: w.requires_approval,
  }));

  it('opens wave 1, completes it, waits for approval, then the gated rest', () => {
    let w = initialWaves(rows);
    expect(w.map((x) => x.state)).toEqual(['open', 'pending', 'pending']);
    w = recordResult(w, 0, false, undefined);
    expect(w.map((x) => x.state)).toEqual(['done', 'awaiting_approval', 'pending']);
    w = approve(w, undefined)!;
    expect(w.map((x) => x.state)).toEqual(['done', 'open', 'pending']);
    w = recordResult(w, 1, false, undefined);
    expect(w.map((x) => x.state)).toEqual(['done', 'done', 'awaiting_approval']);
    expect(approve(w, undefined)!.map((x) => x.state)).toEqual(['done', 'done', 'open']);
  });

  it('pauses over the failure threshold; resume accepts the failures seen', () => {
    const t = { count: 0 };
    let w = initialWaves([
      { index: 0, size: 3, requires_approval: false },
      { index: 1, size: 1, requires_approval: false },
    ]);
    w = recordResult(w, 0, true, t);
    expect(w[0]!.state).toBe('paused');
    expect(resume(w, undefined)).not.toBeNull();
    w = resume(w, t)!;
    expect(w[0]!.state).toBe('open');
    w = recordResult(w, 0, false, t);
    w = recordResult(w, 0, false, t);
    expect(w.map((x) => x.state)).toEqual(['done', 'open']);
    expect(approve(w, t)).toBeNull();
    expect(resume(w, t)).toBeNull();
  });

  it('skips empty waves', () => {
    const w = initialWaves([
      { index: 0, size: 0, requires_approval: false },
      { index: 1, size: 2, requires_approval: false },
    ]);
    expect(w.map((x) => x.state)).toEqual(['done', 'open']);
    expect(advance(w, undefined)).toEqual(w);
  });
});

describe('transaction state', () => {
  it('derives running, committed, rolled back, failed', () => {
    const c = emptyCounts();
    c.pending = 1;
    c.committed = 1;
    expect(transactionState(c, false)).toBe('running');
    expect(transactionState({ ...c, pending: 0 }, false)).toBe('committed');
    expect(transactionState({ ...c, pending: 0, 'rolled back': 1 }, false)).toBe('rolled back');
    expect(transactionState({ ...c, failed: 1 }, false)).toBe('failed');
    expect(transactionState({ ...emptyCounts(), pending: 3 }, true)).toBe('failed');
    expect(deviceStateFromActivation('activated')).toBe('committed');
    expect(deviceStateFromActivation('rolled-back')).toBe('rolled back');
    expect(deviceStateFromActivation('weird')).toBe('failed');
  });
});

describe('receipt export tar', () => {
  it('streams every envelope byte-exact and an index last', async () => {
    const rows: ExportRow[] = [1, 2].map((i) => ({
      id: `r${i}`,
      device: `dev-${i}`,
      rollout_id: `ro${i}`,
      transaction_id: null,
      release_id: 'rel',
      payload_digest: `sha256:${'a'.repeat(64)}`,
      envelope_digest: `sha256:${String(i).repeat(64)}`,
      accepted_at: new Date('2026-01-01T00:00:00Z'),
      label: 'software-key',
      envelope_bytes: new TextEncoder().encode(`{"n":${i}}`),
    }));
    async function* gen() {
      yield* rows;
    }
    const files = new Map<string, string>();
    const ex = extract();
    const done = new Promise<void>((resolve, reject) => {
      ex.on('entry', (h, s, next) => {
        const parts: Buffer[] = [];
        s.on('data', (d: unknown) => parts.push(d as Buffer));
        s.on('end', () => {
          files.set(h.name, Buffer.concat(parts).toString());
          next();
        });
      });
      ex.on('finish', resolve);
      ex.on('error', reject);
    });
    receiptExportStream(gen(), new Date()).pipe(ex);
    await done;
    expect([...files.keys()]).toEqual([`receipts/${'1'.repeat(64)}.dsse.json`, `receipts/${'2'.repeat(64)}.dsse.json`, 'index.jsonl']);
    expect(files.get(`receipts/${'2'.repeat(64)}.dsse.json`)).toBe('{"n":2}');
    const index = files
      .get('index.jsonl')!
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(index[1]).toMatchObject({ device: 'dev-2', rollout_id: 'ro2', accepted_at: '2026-01-01T00:00:00.000Z', label: 'software-key' });
  });

  it('a failing source ends the stream with an error, not a truncated success', async () => {
    // eslint-disable-next-line require-yield -- a source that fails before its first row
    async function* bad(): AsyncGenerator<ExportRow> {
      throw new Error('db gone');
    }
    const s = receiptExportStream(bad(), new Date());
    await expect(Readable.from(s).toArray()).rejects.toThrow(/db gone/);
  });
});
