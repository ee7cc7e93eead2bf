import { LIMITS } from '../limits.js';
import { type Certificate, parseCertificateDer } from './certificate.js';

/**
 * Parsed certificates by their base64 DER (canonical base64 only, so the key is the exact bytes:
 * a different certificate is a different key and never meets another's entry; nothing that failed
 * to decode or parse is remembered). A device embeds the same certificate in every
 * receipt, and parsing it (plus building its key object) costs more than the signature check.
 * Small LRU: a Map keeps insertion order, re-inserting on hit makes it most recent.
 */
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
  if (cache.size > LIMITS.certificateCacheEntries) cache.delete(cache.keys().next().value!);
  return cert;
}

/** Entries held now (tests check the bound). */
export function certificateCacheSize(): number {
  return cache.size;
}

/** Whether this exact base64 text is a certificate already decoded and parsed (so it is canonical base64). */
export function isCachedCertificateText(base64: string): boolean {
  return cache.has(base64);
}
