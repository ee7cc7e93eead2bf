import { createHash, randomBytes } from 'node:crypto';

/**
 * High-entropy bearer secrets (session tokens, API keys, enrollment tokens). Only the
 * SHA-256 is stored: the secrets carry 256 random bits, so a fast hash is enough and keeps
 * the per-request lookup to one indexed equality match.
 */
export interface NewSecret {
  /** Shown once to the caller. */
  plaintext: string;
  /** Short non-secret lead, stored for display and support ("which key is this?"). */
  prefix: string;
  /** hex SHA-256 of the plaintext: the only thing stored. */
  hash: string;
}

export function newSecret(kind: 'svck' | 'svce' | 'svcs'): NewSecret {
  const lead = randomBytes(4).toString('hex');
  const plaintext = `${kind}_${lead}_${randomBytes(32).toString('base64url')}`;
  return { plaintext, prefix: `${kind}_${lead}`, hash: hashSecret(plaintext) };
}

export function hashSecret(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}

/** Secrets are ASCII and bounded; refuse anything else before hashing. */
export function plausibleSecret(value: string): boolean {
  return value.length >= 16 && value.length <= 256 && /^[A-Za-z0-9_-]+$/.test(value);
}
