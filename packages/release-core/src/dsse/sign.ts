import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { toBase64 } from '../encoding/bytes.js';
import type { PrivateKey } from '../keys/types.js';
import type { Envelope } from './envelope.js';
import { pae } from './pae.js';

export interface SignEnvelopeOptions {
  crypto?: CryptoProvider;
}

/** Sign PAE(payloadType, payload) with one key: Ed25519 raw, or P-256 DER ECDSA-SHA256. */
export function signEnvelope(payloadType: string, payload: Uint8Array, key: PrivateKey, opts: SignEnvelopeOptions = {}): Envelope {
  const crypto = opts.crypto ?? defaultCryptoProvider;
  const message = pae(payloadType, payload);
  const sig = key.alg === 'ed25519' ? crypto.signEd25519(key, message) : crypto.signP256(key, message);
  return { payloadType, payload: toBase64(payload), signatures: [{ keyid: key.publicKey.keyid, sig: toBase64(sig) }] };
}
