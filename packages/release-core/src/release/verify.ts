import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import type { Digest } from '../digest.js';
import { type Envelope, envelopeDigest, parseEnvelope, parsedPayloadBytes, payloadDigest as payloadDigestOf } from '../dsse/envelope.js';
import { verifyEnvelope } from '../dsse/verify.js';
import { ReleaseError } from '../errors.js';
import type { PublicKey } from '../keys/types.js';
import { RELEASE_PAYLOAD_TYPE, type ReleasePayload } from './types.js';
import { parseReleasePayload } from './payload-cache.js';

/** Allowance for clocks that disagree, applied to both ends of the validity window. */
export const DEFAULT_CLOCK_SKEW_SECONDS = 300;

export interface VerifyReleaseOptions {
  /** registered authorizer keys (server) or the pinned trust directory (device) */
  trustedKeys: readonly PublicKey[];
  tenant: string;
  product: string;
  now: Date;
  /** device side: must be one of compatibility.profiles */
  profile?: string;
  /** device side: last time the device had fresh metadata; checked against max_offline_age_s */
  lastOnlineAt?: Date;
  /** default DEFAULT_CLOCK_SKEW_SECONDS */
  clockSkewSeconds?: number;
  /** byte cap of the envelope when given as text or bytes */
  maxBytes?: number;
  crypto?: CryptoProvider;
}

export interface VerifiedRelease {
  /** deep-frozen */
  payload: ReleasePayload;
  payloadDigest: Digest;
  envelopeDigest: Digest;
  keyid: string;
  payloadBytes: Uint8Array;
  envelope: Envelope;
}

/**
 * Verify a signed release in the order that keeps untrusted bytes away from the parser
 *: envelope shape -> payload type -> signature over PAE by a trusted Ed25519 key ->
 * canonical bytes -> JSON -> schema -> tenant, product, validity, offline age, profile.
 */
export function verifyRelease(env: Envelope | unknown, opts: VerifyReleaseOptions): VerifiedRelease {
  const crypto = opts.crypto ?? defaultCryptoProvider;
  const parsed =
    typeof env === 'object' && env !== null && parsedPayloadBytes(env as Envelope)
      ? (env as Envelope)
      : parseEnvelope(env, { payloadTypes: [RELEASE_PAYLOAD_TYPE], ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}) });
  // spec §4 (svc-release verify): DSSE signature by a registered authorizer key; contracts §1: Ed25519
  const { payload: bytes, keyid } = verifyEnvelope(parsed, opts.trustedKeys, { payloadType: RELEASE_PAYLOAD_TYPE, algorithms: ['ed25519'], crypto });
  const payloadDigest = payloadDigestOf(parsed, bytes, crypto);
  // canonical bytes (contracts §1), then JSON, then the schema; remembered per payload digest
  const payload = parseReleasePayload(bytes, payloadDigest);
  // spec §4 release submission 1: tenant and product
  if (payload.tenant !== opts.tenant) throw new ReleaseError('TENANT_MISMATCH', `release is for tenant ${payload.tenant}, expected ${opts.tenant}`);
  if (payload.product !== opts.product)
    throw new ReleaseError('PRODUCT_MISMATCH', `release is for product ${JSON.stringify(payload.product)}, expected ${JSON.stringify(opts.product)}`);
  checkValidityWindow(payload, opts);
  // spec §2.2: the device accepts only releases for its compatibility profile
  if (opts.profile !== undefined && !payload.compatibility.profiles.includes(opts.profile))
    throw new ReleaseError(
      'PROFILE_INCOMPATIBLE',
      `release supports profiles ${payload.compatibility.profiles.join(', ')}, not ${JSON.stringify(opts.profile)}`,
    );
  return {
    payload,
    payloadDigest,
    envelopeDigest: envelopeDigest(parsed, crypto),
    keyid,
    payloadBytes: bytes,
    envelope: parsed,
  };
}

function checkValidityWindow(payload: ReleasePayload, opts: VerifyReleaseOptions): void {
  const skew = opts.clockSkewSeconds ?? DEFAULT_CLOCK_SKEW_SECONDS;
  if (!Number.isFinite(skew) || skew < 0) throw new RangeError('clockSkewSeconds must be a non-negative number');
  const now = opts.now.getTime();
  if (Number.isNaN(now)) throw new RangeError('now is an invalid Date');
  const { not_before, not_after, max_offline_age_s } = payload.validity;
  // spec §8: a release has a validity window; the skew allowance widens it at both ends
  if (now + skew * 1000 < Date.parse(not_before))
    throw new ReleaseError('NOT_YET_VALID', `release is not valid before ${not_before} (now ${opts.now.toISOString()}, skew ${skew}s)`);
  if (now - skew * 1000 > Date.parse(not_after))
    throw new ReleaseError('EXPIRED', `release expired at ${not_after} (now ${opts.now.toISOString()}, skew ${skew}s)`);
  // spec §8: the offline-age limit is checked by the device, on its own clock (no skew)
  if (opts.lastOnlineAt !== undefined) {
    const age = (now - opts.lastOnlineAt.getTime()) / 1000;
    if (!(age <= max_offline_age_s))
      throw new ReleaseError('OFFLINE_AGE_EXCEEDED', `device has been offline ${Math.floor(age)}s, the release allows ${max_offline_age_s}s`);
  }
}
