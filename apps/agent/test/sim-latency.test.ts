import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../src/sim/latency.js';

describe('the simulator latency histogram', () => {
  it('answers percentiles at bucket edges: 1 ms to 1 s, 10 ms to 10 s, 100 ms to 120 s, Infinity beyond', () => {
    const h = new LatencyHistogram();
    expect(h.percentile(99)).toBeUndefined();
    for (let i = 1; i <= 100; i++) h.record(i - 0.5); // 0.5 .. 99.5 ms
    expect(h.count).toBe(100);
    expect(h.percentile(50)).toBe(50);
    expect(h.percentile(99)).toBe(99);
    expect(h.percentile(100)).toBe(100);
    const wide = new LatencyHistogram();
    for (const ms of [0, 1000, 1000.5, 9_995, 10_000.1, 119_999, 500_000]) wide.record(ms);
    expect([1, 2, 3, 4, 5, 6, 7].map((k) => wide.percentile((k / 7) * 100))).toEqual([1, 1000, 1010, 10_000, 10_100, 120_000, Number.POSITIVE_INFINITY]);
  });

  it('takes percentiles of what was recorded since a mark only', () => {
    const h = new LatencyHistogram();
    for (let i = 0; i < 1000; i++) h.record(5_000);
    const mark = h.mark();
    for (let i = 0; i < 99; i++) h.record(10);
    h.record(200);
    expect(h.percentile(99, mark)).toBe(10);
    expect(h.percentile(100, mark)).toBe(200);
    expect(h.percentile(50)).toBe(5_000);
    expect(h.percentile(50, h.mark())).toBeUndefined();
  });

  it("adds another thread's counters since its last mark, so the sum answers as one histogram would", () => {
    const thread = new LatencyHistogram();
    const sum = new LatencyHistogram();
    const one = new LatencyHistogram();
    for (let i = 0; i < 50; i++) [thread, one].forEach((h) => h.record(20));
    let seen = thread.mark();
    sum.add(seen);
    for (let i = 0; i < 50; i++) [thread, one].forEach((h) => h.record(3_000));
    sum.add(thread.mark(), seen);
    seen = thread.mark();
    sum.add(seen, seen);
    expect(sum.count).toBe(100);
    expect([50, 51, 100].map((p) => sum.percentile(p))).toEqual([50, 51, 100].map((p) => one.percentile(p)));
  });
});
