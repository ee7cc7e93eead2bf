import { type Certificate, parseCertificateDer } from './certificate.js';

/**
 * Parsed certificates by their base64 DER. A device embeds the same certificate in every
 * receipt, and parsing it (plus building its key object) costs more than the signature check.
 * Small LRU: a Map keeps insertion order, re-inserting on hit makes it most recent.
 */
const MAX_ENTRIES = 512;
const cache = new Map<string, Certificate>();

export function cachedCertificate(base64: string, der: () => Uint8Array): Certificate {
  const hit = cache.get(base64);
  if (hit) {
    cache.delete(base64);
    cache.set(base64, hit);
    return hit;
  }
  const cert = Object.freeze(parseCertificateDer(der()));
  cache.set(base64, cert);
  if (cache.size > MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  return cert;
}
