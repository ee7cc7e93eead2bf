/**
 * Call latencies of the whole simulated fleet, in fixed buckets: 1 ms wide up to 1 s, 10 ms
 * up to 10 s, 100 ms up to 120 s, one bucket beyond. 3,001 counters whatever the fleet size or
 * the run's length, so percentiles need no samples kept; a percentile is its bucket's upper
 * edge (at most 1 ms, 10 ms or 100 ms above the true value in the three ranges).
 */
const EDGES: readonly number[] = (() => {
  const e: number[] = [];
  for (let ms = 1; ms <= 1000; ms += 1) e.push(ms);
  for (let ms = 1010; ms <= 10_000; ms += 10) e.push(ms);
  for (let ms = 10_100; ms <= 120_000; ms += 100) e.push(ms);
  return e;
})();

function bucketOf(ms: number): number {
  if (ms <= 1000) return Math.max(0, Math.ceil(ms) - 1);
  if (ms <= 10_000) return 1000 + Math.ceil((ms - 1000) / 10) - 1;
  if (ms <= 120_000) return 1900 + Math.ceil((ms - 10_000) / 100) - 1;
  return EDGES.length;
}

export class LatencyHistogram {
  private readonly counts = new Uint32Array(EDGES.length + 1);
  private total = 0;

  record(ms: number): void {
    this.counts[bucketOf(ms)]! += 1;
    this.total += 1;
  }

  get count(): number {
    return this.total;
  }

  /** Adds counters taken elsewhere (another thread's histogram: the difference of two of its marks). */
  add(counts: Uint32Array, since?: Uint32Array): void {
    for (let i = 0; i < this.counts.length; i++) {
      const n = (counts[i] ?? 0) - (since?.[i] ?? 0);
      this.counts[i]! += n;
      this.total += n;
    }
  }

  /** The counters now, to take percentiles of what comes after (`percentile(p, mark)`). */
  mark(): Uint32Array {
    return this.counts.slice();
  }

  /**
   * The `p`-th percentile (0 < p <= 100) in milliseconds of every call recorded, or of those
   * recorded since `since` (a mark()); undefined when there are none. Infinity past 120 s.
   */
  percentile(p: number, since?: Uint32Array): number | undefined {
    let n = 0;
    for (let i = 0; i < this.counts.length; i++) n += this.counts[i]! - (since?.[i] ?? 0);
    if (n === 0) return undefined;
    const rank = Math.ceil((p / 100) * n);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]! - (since?.[i] ?? 0);
      if (seen >= rank) return i < EDGES.length ? EDGES[i]! : Number.POSITIVE_INFINITY;
    }
    return Number.POSITIVE_INFINITY;
  }
}
