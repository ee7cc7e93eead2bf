export { RELEASE_ERROR_CODES, ReleaseError, isReleaseError } from './errors.js';
export type { Issue, ReleaseErrorCode } from './errors.js';
export type { CryptoProvider } from './crypto/provider.js';
export { nodeCryptoProvider } from './crypto/node.js';
export { nobleCryptoProvider } from './crypto/noble.js';
export { canonicalize, isCanonical } from './encoding/jcs.js';
export { sha256Digest, isDigest } from './digest.js';
export type { Digest } from './digest.js';
export type { KeyAlgorithm, PublicKey, PrivateKey } from './keys/types.js';
export {
  parsePublicKeyPem,
  parsePrivateKeyPem,
  publicKeyFromSpkiDer,
  privateKeyFromPkcs8Der,
  keyIdOf,
  generateKeyPair,
} from './keys/keys.js';
export { pae } from './dsse/pae.js';
export { parseEnvelope, envelopeBytes, envelopeDigest, DEFAULT_MAX_ENVELOPE_BYTES } from './dsse/envelope.js';
export type { Envelope, Signature, ParseEnvelopeOptions } from './dsse/envelope.js';
export { signEnvelope } from './dsse/sign.js';
export type { SignEnvelopeOptions } from './dsse/sign.js';
export { verifyEnvelope } from './dsse/verify.js';
export type { VerifyEnvelopeOptions, VerifiedEnvelope } from './dsse/verify.js';
