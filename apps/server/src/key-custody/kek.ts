/**
 * The key-encryption key (KEK): every private key the service holds is stored wrapped by it
 * (wrapped-keys.ts), so neither the data directory nor a database dump opens a key without it.
 * Two sources: a PKCS#11 token (the AES key never leaves the token, pkcs11-kek.ts) or a
 * 32-byte key file outside the data directory (file-kek.ts). docs/server.md "Key encryption".
 */
export interface Kek {
  /** Names this KEK in every wrapped key row (`kek_id`): `file:<fingerprint>` or `pkcs11:<token>/<label>`. */
  readonly id: string;
  /** The wrap algorithm recorded with each wrapped key (`wrap_alg`). */
  readonly algorithm: WrapAlgorithm;
  /** AES-256-GCM over `plain`, bound to `aad` (the key's id); returns iv || ciphertext || tag. */
  wrap(plain: Buffer, aad: Buffer): Promise<Buffer>;
  /** The inverse of wrap; throws KekError when the bytes were not wrapped by this KEK for `aad`. */
  unwrap(wrapped: Buffer, aad: Buffer): Promise<Buffer>;
  close(): Promise<void>;
}

export const WRAP_ALGORITHMS = ['A256GCM', 'PKCS11-CKM_AES_GCM'] as const;
export type WrapAlgorithm = (typeof WRAP_ALGORITHMS)[number];

/** GCM nonce and tag sizes shared by both sources, so the stored layout is the same. */
export const GCM_IV_BYTES = 12;
export const GCM_TAG_BYTES = 16;

/** A KEK that cannot be opened or used: the server refuses to start, a request answers KEY_UNAVAILABLE. */
export class KekError extends Error {
  override readonly name = 'KekError';
}
