import type { CryptoProvider } from '../crypto/provider.js';
import type { Envelope } from '../dsse/envelope.js';
import { signEnvelope } from '../dsse/sign.js';
import { canonicalize } from '../encoding/jcs.js';
import { ReleaseError } from '../errors.js';
import type { PrivateKey } from '../keys/types.js';
import { RECEIPT_PAYLOAD_TYPE, type ReceiptPayload } from './types.js';
import { validateReceiptPayload } from './validate.js';

export interface SignReceiptOptions {
  crypto?: CryptoProvider;
}

/**
 * spec §2.3 rule 2: signed with the device's ECDSA P-256 identity key; contracts §1: DER ECDSA-SHA256
 * over PAE of the canonical payload. The agent persists the returned envelope before upload.
 */
export function signReceipt(payload: ReceiptPayload, key: PrivateKey, opts: SignReceiptOptions = {}): Envelope {
  if (key.alg !== 'p256') throw new ReleaseError('KEY_INVALID', `a receipt is signed with the device P-256 key, not ${key.alg}`);
  const valid = validateReceiptPayload(payload);
  return signEnvelope(RECEIPT_PAYLOAD_TYPE, canonicalize(valid), key, opts);
}
