import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { ReleaseError } from '../errors.js';
import type { KeyAlgorithm, PublicKey } from '../keys/types.js';
import { type Envelope, parseEnvelope, parsedPae, parsedPayloadBytes, parsedSignatureBytes } from './envelope.js';

export interface VerifyEnvelopeOptions {
  /** Required payload type; refused with PAYLOAD_TYPE_UNKNOWN otherwise. */
  payloadType?: string;
  /** Distinct trusted key ids whose signatures must verify; default 1. */
  threshold?: number;
  /** Algorithms accepted for this document type (a release is Ed25519 only); default both. */
  algorithms?: readonly KeyAlgorithm[];
  crypto?: CryptoProvider;
}

export interface VerifiedEnvelope {
  /** the raw payload bytes the signature covers; not parsed here */
  payload: Uint8Array;
  /** the first trusted key that verified */
  keyid: string;
  /** every distinct trusted key id that verified */
  keyids: string[];
}

/**
 * Verify bytes, then parse: signatures are checked over PAE of the raw payload
 * bytes; the payload is returned undecoded. The threshold counts distinct trusted key ids
 * (duplicate key ids are already refused by parseEnvelope), so one key signing twice never
 * counts twice. Signatures by unknown keys are ignored, as in TUF.
 */
export function verifyEnvelope(env: Envelope, trustedKeys: readonly PublicKey[], opts: VerifyEnvelopeOptions = {}): VerifiedEnvelope {
  const crypto = opts.crypto ?? defaultCryptoProvider;
  const threshold = opts.threshold ?? 1;
  if (!Number.isInteger(threshold) || threshold < 1) throw new RangeError('threshold must be a positive integer');
  // Accept envelopes that did not come from parseEnvelope: the same strict checks apply.
  let payload = parsedPayloadBytes(env);
  if (!payload) {
    env = parseEnvelope(env, opts.payloadType ? { payloadTypes: [opts.payloadType] } : {});
    payload = parsedPayloadBytes(env)!;
  }
  if (opts.payloadType !== undefined && env.payloadType !== opts.payloadType)
    throw new ReleaseError('PAYLOAD_TYPE_UNKNOWN', `payloadType ${JSON.stringify(env.payloadType)} is not ${JSON.stringify(opts.payloadType)}`);
  let message: Uint8Array | undefined;
  const verified: string[] = [];
  let failedKeyid: string | undefined;
  for (let i = 0; i < env.signatures.length; i++) {
    const key = findKey(trustedKeys, env.signatures[i]!.keyid, opts.algorithms);
    if (!key) continue;
    const sig = parsedSignatureBytes(env, i);
    message ??= parsedPae(env)!;
    const ok = sig !== undefined && (key.alg === 'ed25519' ? crypto.verifyEd25519(key, message, sig) : crypto.verifyP256(key, message, sig));
    if (ok) {
      if (!verified.includes(key.keyid)) verified.push(key.keyid);
    } else failedKeyid ??= key.keyid;
  }
  if (verified.length >= threshold) return { payload, keyid: verified[0]!, keyids: verified };
  if (failedKeyid !== undefined) throw new ReleaseError('SIGNATURE_INVALID', `signature by trusted key ${failedKeyid} does not verify`);
  if (verified.length > 0) throw new ReleaseError('KEY_UNTRUSTED', `${verified.length} trusted signature(s), ${threshold} required`);
  throw new ReleaseError('KEY_UNTRUSTED', `no signature by a trusted key (signed by ${env.signatures.map((s) => s.keyid).join(', ')})`);
}

function findKey(keys: readonly PublicKey[], keyid: string, algorithms?: readonly KeyAlgorithm[]): PublicKey | undefined {
  for (const k of keys) if (k.keyid === keyid && (!algorithms || algorithms.includes(k.alg))) return k;
  return undefined;
}
