import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import type { CryptoProvider } from './provider.js';

/*
 * Pure TypeScript provider. Settings chosen to accept exactly what OpenSSL accepts:
 * - Ed25519 with zip215 off: RFC 8032 / FIPS 186-5 strict decoding, like OpenSSL.
 * - ECDSA with lowS off: OpenSSL neither produces nor requires low-S signatures, so a
 *   receipt signed by `openssl dgst -sign` has a high S half of the time.
 * - format 'der': receipts carry DER signatures (contracts §1); noble parses strict DER.
 */
export const nobleCryptoProvider: CryptoProvider = {
  name: 'noble',
  sha256(data) {
    return sha256(data);
  },
  verifyEd25519(key, message, signature) {
    if (key.alg !== 'ed25519' || signature.length !== 64) return false;
    try {
      return ed25519.verify(signature, message, key.raw, { zip215: false });
    } catch {
      return false;
    }
  },
  signEd25519(key, message) {
    if (key.alg !== 'ed25519') throw new TypeError('signEd25519 needs an Ed25519 private key');
    return ed25519.sign(message, key.raw);
  },
  verifyP256(key, message, derSignature) {
    if (key.alg !== 'p256') return false;
    try {
      return p256.verify(derSignature, message, key.raw, { format: 'der', lowS: false, prehash: true });
    } catch {
      return false;
    }
  },
  signP256(key, message) {
    if (key.alg !== 'p256') throw new TypeError('signP256 needs a P-256 private key');
    // Hedged signing (fresh entropy mixed into RFC 6979 k), as OpenSSL does.
    return p256.sign(message, key.raw, { format: 'der', lowS: false, prehash: true, extraEntropy: true });
  },
  p256PublicPoint(secret) {
    return p256.getPublicKey(secret, false);
  },
};
