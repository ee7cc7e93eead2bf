import type { ApiKeyRecord } from '../resources/api-keys/queries.js';
import { CREDENTIALS_CHANNEL } from '../store/migrations/0009_credential_notify.js';
import { NotifiedCache, type NotifiedCacheOptions } from '../store/notified-cache.js';
import type { Store } from '../store/open.js';

export type ApiKeyCacheOptions = NotifiedCacheOptions;

/**
 * API-key lookups remembered per process, so an API request costs one database round trip
 * instead of two (the list route: about a third of the server's and the database's work per
 * request; docs/server.md "Device list performance").
 *
 * Safe across server processes because the database announces every change that can end
 * a key's validity (migration 0009: NOTIFY at COMMIT) and every process clears its cache on
 * it; the rules (bypassed while the listener is down, cleared when it is back, 10 s expiry,
 * generations against a read racing a clear) are NotifiedCache's. Unknown keys are never cached.
 */
export class ApiKeyCache extends NotifiedCache<ApiKeyRecord> {
  /** Opens the store's change listener and a cache cleared by it. */
  static async open(store: Store, options: ApiKeyCacheOptions = {}): Promise<{ cache: ApiKeyCache; close(): Promise<void> }> {
    // eslint-disable-next-line prefer-const -- assigned after the listener that reads it is opened
    let cache: ApiKeyCache | undefined;
    const listener = await store.listen(CREDENTIALS_CHANNEL, () => cache?.clear());
    cache = new ApiKeyCache(listener, options);
    return { cache, close: () => listener.close() };
  }
}
