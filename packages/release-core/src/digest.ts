import { defaultCryptoProvider } from './crypto/default.js';
import type { CryptoProvider } from './crypto/provider.js';
import { toHex } from './encoding/bytes.js';

/** contracts 1: `sha256:` + 64 lowercase hex. */
export type Digest = `sha256:${string}`;

const DIGEST = /^sha256:[0-9a-f]{64}$/;

export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && DIGEST.test(value);
}

export function sha256Digest(bytes: Uint8Array, crypto: CryptoProvider = defaultCryptoProvider): Digest {
  return `sha256:${toHex(crypto.sha256(bytes))}`;
}
