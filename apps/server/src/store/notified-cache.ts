import type { ChangeListener } from './notify.js';

export interface NotifiedCacheOptions {
  /** Upper bound on how long an entry is trusted even with notifications working. */
  ttlMs?: number;
  /** Entries kept; the oldest go first. */
  maxEntries?: number;
  /** Monotonic milliseconds (tests). */
  clock?: () => number;
}

/**
 * A per-process cache of facts the database can take back, kept safe across server
 * processes by change notifications (store/notify.ts): the database announces every change
 * that can end an entry's validity (a trigger's NOTIFY, delivered at COMMIT) and every
 * process clears its cache on it. The cache answers only while its listener is live; while
 * the listener is down it is bypassed (every lookup misses, as without a cache), and it is
 * cleared when the listener comes back. Entries also expire after `ttlMs` (10 s), which
 * bounds a stale answer if a connection dies silently without the listener noticing.
 *
 * A lookup that started before a clear must not refill the cache with what it read before
 * the change: `begin()` returns the generation, and `remember` drops results of an older one.
 */
export class NotifiedCache<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  protected readonly clock: () => number;

  constructor(
    private readonly listener: Pick<ChangeListener, 'live'>,
    options: NotifiedCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? (() => performance.now());
  }

  get size(): number {
    return this.entries.size;
  }

  /** The entry for `key`; with `forgottenAt` (a time of `clock`), one remembered then or before is gone too. */
  lookup(key: string, forgottenAt?: number): V | undefined {
    if (!this.listener.live) return undefined;
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (this.clock() - entry.at >= this.ttlMs || (forgottenAt !== undefined && entry.at <= forgottenAt)) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  begin(): number {
    return this.generation;
  }

  remember(key: string, value: V, generation: number): void {
    if (generation !== this.generation || !this.listener.live) return;
    // a re-remembered key moves to the end of the eviction order
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, at: this.clock() });
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  /** Lookups already running when this is called remember nothing (what they read may be stale). */
  protected invalidate(): void {
    this.generation++;
  }
}
