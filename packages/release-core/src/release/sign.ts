import type { CryptoProvider } from '../crypto/provider.js';
import type { Envelope } from '../dsse/envelope.js';
import { signEnvelope } from '../dsse/sign.js';
import { canonicalize } from '../encoding/jcs.js';
import { ReleaseError } from '../errors.js';
import type { PrivateKey } from '../keys/types.js';
import { RELEASE_PAYLOAD_TYPE, type ReleasePayload } from './types.js';
import { validateReleasePayload } from './validate.js';

export interface SignReleaseOptions {
  crypto?: CryptoProvider;
}

/**
 * Validate, canonicalize (RFC 8785) and sign a release payload with an Ed25519 authorizer key
 * (contracts §1: release signature is Ed25519). Nothing invalid is ever signed.
 */
export function signRelease(payload: ReleasePayload | unknown, key: PrivateKey, opts: SignReleaseOptions = {}): Envelope {
  if (key.alg !== 'ed25519') throw new ReleaseError('KEY_INVALID', `a release is signed with an Ed25519 key, not ${key.alg}`);
  const valid = validateReleasePayload(payload);
  return signEnvelope(RELEASE_PAYLOAD_TYPE, canonicalize(valid), key, opts);
}
