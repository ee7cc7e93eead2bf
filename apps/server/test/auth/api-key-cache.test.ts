import { describe, expect, it } from 'vitest';
import { ApiKeyCache } from '../../src/auth/api-key-cache.js';
import type { ApiKeyRecord } from '../../src/resources/api-keys/queries.js';

/** The cache's own rules; the database side (NOTIFY on revoke) is in auth-api-keys and platform-two-processes. */
function record(id: string): ApiKeyRecord {
  return { id, tenant_id: 't', name: id, role: 'viewer', prefix: 'p', created_at: new Date(0), last_used_at: null, revoked_at: null };
}

describe('ApiKeyCache', () => {
  const setup = (options: { ttlMs?: number; maxEntries?: number } = {}) => {
    const listener = { live: true };
    let now = 0;
    const cache = new ApiKeyCache(listener, { ...options, clock: () => now });
    return { cache, listener, advance: (ms: number) => (now += ms) };
  };

  it('remembers a lookup, forgets it on clear', () => {
    const { cache } = setup();
    cache.remember('h1', record('k1'), cache.begin());
    expect(cache.lookup('h1')?.id).toBe('k1');
    cache.clear();
    expect(cache.lookup('h1')).toBeUndefined();
  });

  it('a lookup that began before a clear does not refill the cache (revocation racing a read)', () => {
    const { cache } = setup();
    const generation = cache.begin();
    cache.clear(); // the revocation's notification lands while the read was in flight
    cache.remember('h1', record('k1'), generation);
    expect(cache.lookup('h1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('expires entries after the TTL', () => {
    const { cache, advance } = setup({ ttlMs: 1000 });
    cache.remember('h1', record('k1'), cache.begin());
    advance(999);
    expect(cache.lookup('h1')).toBeDefined();
    advance(1);
    expect(cache.lookup('h1')).toBeUndefined();
  });

  it('is bypassed while its listener is down, and stores nothing then', () => {
    const { cache, listener } = setup();
    cache.remember('h1', record('k1'), cache.begin());
    listener.live = false;
    expect(cache.lookup('h1')).toBeUndefined();
    cache.remember('h2', record('k2'), cache.begin());
    listener.live = true;
    expect(cache.lookup('h2')).toBeUndefined();
  });

  it('holds at most maxEntries, dropping the oldest', () => {
    const { cache } = setup({ maxEntries: 2 });
    for (const h of ['a', 'b', 'c']) cache.remember(h, record(h), cache.begin());
    expect(cache.size).toBe(2);
    expect(cache.lookup('a')).toBeUndefined();
    expect(cache.lookup('c')?.id).toBe('c');
  });
});
