export type KeyAlgorithm = 'ed25519' | 'p256';

export interface PublicKey {
  readonly alg: KeyAlgorithm;
  /** SubjectPublicKeyInfo DER */
  readonly spki: Uint8Array;
  /** contracts §1: `sha256:` + hex SHA-256 of the SPKI DER */
  readonly keyid: string;
  /** SPKI PEM (64-column lines, trailing newline) */
  readonly pem: string;
  /** raw key for the noble provider: 32 bytes (Ed25519) or 65-byte uncompressed point (P-256) */
  readonly raw: Uint8Array;
}

export interface PrivateKey {
  readonly alg: KeyAlgorithm;
  /** PKCS#8 DER */
  readonly pkcs8: Uint8Array;
  readonly publicKey: PublicKey;
  /** PKCS#8 PEM */
  readonly pem: string;
  /** raw secret for the noble provider: Ed25519 seed or P-256 scalar, 32 bytes */
  readonly raw: Uint8Array;
}
