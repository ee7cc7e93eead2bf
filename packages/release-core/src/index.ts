// The public surface of @svc/release-core (API.md). test/index.test.ts pins this list.
export { RELEASE_ERROR_CODES, ReleaseError, isReleaseError } from './errors.js';
export type { Issue, ReleaseErrorCode } from './errors.js';

// crypto provider seam
export type { CryptoProvider } from './crypto/provider.js';
export { nodeCryptoProvider } from './crypto/node.js';
export { nobleCryptoProvider } from './crypto/noble.js';

// encodings, keys, digests
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

// DSSE
export { pae } from './dsse/pae.js';
export { parseEnvelope, envelopeBytes, envelopeDigest, DEFAULT_MAX_ENVELOPE_BYTES } from './dsse/envelope.js';
export type { Envelope, Signature, ParseEnvelopeOptions } from './dsse/envelope.js';
export { signEnvelope } from './dsse/sign.js';
export type { SignEnvelopeOptions } from './dsse/sign.js';
export { verifyEnvelope } from './dsse/verify.js';
export type { VerifyEnvelopeOptions, VerifiedEnvelope } from './dsse/verify.js';

// releases
export { RELEASE_PAYLOAD_TYPE, MEMBER_KINDS, REFUSED_KINDS, OS_BUNDLE_KIND, RAUC_MEDIA_TYPE } from './release/types.js';
export type {
  ReleasePayload,
  Component,
  ComponentKind,
  MemberKind,
  Placement,
  TargetDescriptor,
  HealthPolicy,
  HealthProbe,
  RolloutConstraints,
  Wave,
} from './release/types.js';
export { RELEASE_LIMITS } from './release/limits.js';
export { validateReleasePayload } from './release/validate.js';
export { signRelease } from './release/sign.js';
export type { SignReleaseOptions } from './release/sign.js';
export { verifyRelease, DEFAULT_CLOCK_SKEW_SECONDS } from './release/verify.js';
export type { VerifyReleaseOptions, VerifiedRelease } from './release/verify.js';

// groups and transactions
export { targetPolicyDigest } from './release/target-policy.js';
export type { GroupSnapshot } from './release/target-policy.js';
export { transactionMembers } from './release/transaction.js';
export type { TransactionMember } from './release/transaction.js';

// X.509 and receipts
export { parseCertificatePem, parseCertificateDer } from './x509/certificate.js';
export type { Certificate } from './x509/certificate.js';
export { verifyCertificateChain, deviceIdentity } from './x509/chain.js';
export type { VerifyChainOptions } from './x509/chain.js';
export { RECEIPT_PAYLOAD_TYPE } from './receipt/types.js';
export type { ReceiptPayload, ReceiptMember, OsResult, ActivationOutcome, HealthVerdict, MemberVerdict } from './receipt/types.js';
export { validateReceiptPayload } from './receipt/validate.js';
export { signReceipt } from './receipt/sign.js';
export type { SignReceiptOptions } from './receipt/sign.js';
export { verifyReceipt, DEFAULT_MAX_RECEIPT_BYTES } from './receipt/verify.js';
export type { VerifyReceiptOptions, VerifiedReceipt } from './receipt/verify.js';
export { checkReceiptAgainstRelease } from './receipt/check.js';
export type { ReceiptExpectation } from './receipt/check.js';
