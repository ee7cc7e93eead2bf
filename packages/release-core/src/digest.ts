import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from './crypto/provider.js';
import { toHex } from './encoding/bytes.js';

/** contracts §1: `sha256:` + 64 lowercase hex. The one digest type of every package. */
export type Digest = `sha256:${string}`;

const PREFIX = 'sha256:';
export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;
const HEX = /^[0-9a-f]{64}$/;

export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && DIGEST_PATTERN.test(value);
}

export function sha256Digest(bytes: Uint8Array, crypto: CryptoProvider = defaultCryptoProvider): Digest {
  return `${PREFIX}${toHex(crypto.sha256(bytes))}`;
}

/**
 * The digest string of a SHA-256 given as 64 lowercase hex: a streaming hash's `digest('hex')`,
 * or TUF's own form inside metadata (contracts §1). Anything else is a caller's mistake
 * (TypeError): check untrusted text with `isDigest` or compare hex with `digestHex` instead.
 */
export function digestFromHex(hex: string): Digest {
  if (typeof hex !== 'string' || !HEX.test(hex)) throw new TypeError(`digestFromHex: expected 64 lowercase hex characters, got ${JSON.stringify(hex)}`);
  return `${PREFIX}${hex}`;
}

/** The 64-hex part of a digest: TUF's `hashes.sha256`, a consistent-snapshot file name. */
export function digestHex(digest: Digest): string {
  return digest.slice(PREFIX.length);
}
