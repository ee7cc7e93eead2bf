import type { Digest } from '../digest.js';
import { parseCanonical } from '../encoding/jcs.js';
import { ReleaseError } from '../errors.js';
import { LIMITS } from '../limits.js';
import type { ReleasePayload } from './types.js';
import { validateReleasePayload } from './validate.js';

/*
 * Whether payload bytes are canonical JSON and a valid svc.release.v1 document depends on the
 * bytes alone, so the verdict is remembered by the SHA-256 of those bytes (which verification
 * computes anyway). The same release is verified over and over (each agent member, every
 * rollout start, the CLI), and parsing plus validating a 10-component payload costs several
 * signature checks. The signature itself is never cached: it is checked on every call, before
 * this is consulted. Entries are deep-frozen so callers cannot change what others receive.
 */
/** bigger payloads are validated every time rather than pinned in memory */
const MAX_CACHED_BYTES = 64 * 1024;
const cache = new Map<Digest, ReleasePayload>();

export function parseReleasePayload(bytes: Uint8Array, digest: Digest): ReleasePayload {
  const hit = cache.get(digest);
  if (hit) return hit;
  // contracts §1: payload bytes MUST equal JCS(parse(bytes))
  const canon = parseCanonical(bytes);
  if (!canon.ok) throw new ReleaseError('PAYLOAD_NOT_CANONICAL', `release payload refused: ${canon.reason}`);
  const payload = deepFreeze(validateReleasePayload(canon.value));
  if (bytes.length <= MAX_CACHED_BYTES) {
    cache.set(digest, payload);
    if (cache.size > LIMITS.releasePayloadCacheEntries) cache.delete(cache.keys().next().value!);
  }
  return payload;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Entries held now (tests check the bound). */
export function releasePayloadCacheSize(): number {
  return cache.size;
}
