import type { ApiKeyRecord } from '../resources/api-keys/queries.js';
import { CREDENTIALS_CHANNEL } from '../store/migrations/0009_credential_notify.js';
import type { ChangeListener } from '../store/notify.js';
import type { Store } from '../store/open.js';

export interface ApiKeyCacheOptions {
  /** Upper bound on how long an entry is trusted even with notifications working. */
  ttlMs?: number;
  /** Entries kept; the oldest go first. Unknown keys are never cached. */
  maxEntries?: number;
  /** Monotonic milliseconds (tests). */
  clock?: () => number;
}

/**
 * API-key lookups remembered per process, so an API request costs one database round trip
 * instead of two (the list route: about a third of the server's and the database's work per
 * request; docs/server.md "Device list performance").
 *
 * Safe across server processes because the database announces every change that can end
 * a key's validity (migration 0009: NOTIFY at COMMIT) and every process clears its cache on
 * it. The cache answers only while its listener is live; while the listener is down it is
 * bypassed (every request reads the database, as without a cache), and it is cleared when
 * the listener comes back. Entries also expire after `ttlMs` (10 s), which bounds a stale
 * answer if a connection dies silently without the listener noticing.
 *
 * A lookup that started before a clear must not refill the cache with what it read before
 * the change: `begin()` returns the generation, and `remember` drops results of an older one.
 */
export class ApiKeyCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord; at: number }>();
  private generation = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(
    private readonly listener: Pick<ChangeListener, 'live'>,
    options: ApiKeyCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? (() => performance.now());
  }

  /** Opens the store's change listener and a cache cleared by it. */
  static async open(store: Store, options: ApiKeyCacheOptions = {}): Promise<{ cache: ApiKeyCache; close(): Promise<void> }> {
    // eslint-disable-next-line prefer-const -- assigned after the listener that reads it is opened
    let cache: ApiKeyCache | undefined;
    const listener = await store.listen(CREDENTIALS_CHANNEL, () => cache?.clear());
    cache = new ApiKeyCache(listener, options);
    return { cache, close: () => listener.close() };
  }

  get size(): number {
    return this.entries.size;
  }

  lookup(keyHash: string): ApiKeyRecord | undefined {
    if (!this.listener.live) return undefined;
    const entry = this.entries.get(keyHash);
    if (entry === undefined) return undefined;
    if (this.clock() - entry.at >= this.ttlMs) {
      this.entries.delete(keyHash);
      return undefined;
    }
    return entry.record;
  }

  begin(): number {
    return this.generation;
  }

  remember(keyHash: string, record: ApiKeyRecord, generation: number): void {
    if (generation !== this.generation || !this.listener.live) return;
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(keyHash, { record, at: this.clock() });
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
