import type { PrivateKey, PublicKey } from '../keys/types.js';

/**
 * The one seam between release rules and cryptography. `nodeCryptoProvider` (OpenSSL) is the
 * default everywhere; `nobleCryptoProvider` is pure TypeScript for runtimes without node:crypto.
 * Both must pass the same vectors (test/dsse.test.ts runs each case with both; test/receipt.test.ts and test/keys.test.ts compare them).
 */
export interface CryptoProvider {
  readonly name: 'node' | 'noble';
  sha256(data: Uint8Array): Uint8Array;
  /** RFC 8032 Ed25519 over the message, 64 raw signature bytes. */
  verifyEd25519(key: PublicKey, message: Uint8Array, signature: Uint8Array): boolean;
  signEd25519(key: PrivateKey, message: Uint8Array): Uint8Array;
  /** ECDSA P-256 with SHA-256 over the message; the signature is DER (as OpenSSL writes it). */
  verifyP256(key: PublicKey, message: Uint8Array, derSignature: Uint8Array): boolean;
  signP256(key: PrivateKey, message: Uint8Array): Uint8Array;
  /** The uncompressed public point (65 bytes) of a P-256 private scalar; throws when the scalar is out of range. */
  p256PublicPoint(secret: Uint8Array): Uint8Array;
}
