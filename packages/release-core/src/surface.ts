// The public surface of @svc/release-core (API.md) that every platform shares; index.ts adds
// the node:crypto provider, index.browser.ts nothing (the `browser` export condition).
export { CodedError, RELEASE_ERROR_CODES, ReleaseError, codedErrorGuard, isReleaseError } from './errors.js';
export type { Issue, ReleaseErrorCode } from './errors.js';

// crypto provider seam
export type { CryptoProvider } from './crypto/provider.js';
export { nobleCryptoProvider } from './crypto/noble.js';

// limits and identifiers shared by every package
export { LIMITS } from './limits.js';
export type { Limits } from './limits.js';
export { IDENTIFIER_PATTERNS, isUuid, normalizeUuid, isDeviceName } from './identifiers.js';

// encodings, keys, digests
export { canonicalize, isCanonical } from './encoding/jcs.js';
export { sha256Digest, isDigest, digestFromHex, digestHex } from './digest.js';
export type { Digest } from './digest.js';
export { decodePem, encodePem } from './keys/pem.js';
export type { KeyAlgorithm, PublicKey, PrivateKey } from './keys/types.js';
export { parsePublicKeyPem, parsePrivateKeyPem, publicKeyFromSpkiDer, privateKeyFromPkcs8Der, keyIdOf, generateKeyPair } from './keys/keys.js';
export { tufKeyId } from './keys/tuf-key-id.js';

// DSSE
export { pae } from './dsse/pae.js';
export { parseEnvelope, envelopeBytes, envelopeDigest } from './dsse/envelope.js';
export type { Envelope, Signature, ParseEnvelopeOptions } from './dsse/envelope.js';
export { signEnvelope } from './dsse/sign.js';
export type { SignEnvelopeOptions } from './dsse/sign.js';
export { verifyEnvelope } from './dsse/verify.js';
export type { VerifyEnvelopeOptions, VerifiedEnvelope } from './dsse/verify.js';

// releases
export { RELEASE_PAYLOAD_TYPE, MEMBER_KINDS, COMPONENT_KINDS, ARTIFACT_KINDS, REFUSED_KINDS, OS_BUNDLE_KIND, RAUC_MEDIA_TYPE } from './release/types.js';
export type {
  ReleasePayload,
  Component,
  ArtifactKind,
  ComponentKind,
  MemberKind,
  RefusedKind,
  Placement,
  TargetDescriptor,
  HealthPolicy,
  HealthProbe,
  RolloutConstraints,
  Wave,
  FailureThreshold,
} from './release/types.js';
export { validateReleasePayload } from './release/validate.js';
export { checkHealthPolicy } from './release/validate-policy.js';
export { signRelease } from './release/sign.js';
export type { SignReleaseOptions } from './release/sign.js';
export { verifyRelease, DEFAULT_CLOCK_SKEW_SECONDS } from './release/verify.js';
export type { VerifyReleaseOptions, VerifiedRelease } from './release/verify.js';

// groups and transactions
export { targetPolicyDigest } from './release/target-policy.js';
export type { GroupSnapshot } from './release/target-policy.js';
export { transactionMembers } from './release/transaction.js';
export type { TransactionMember } from './release/transaction.js';
export { parseWaves, parseFailureThreshold } from './release/waves.js';
export type { WaveSource } from './release/waves.js';
export { hashedTargetPath } from './target-path.js';

// X.509 and receipts
export { certificateSpki, parseCertificatePem, parseCertificatesPem, parseCertificateDer } from './x509/certificate.js';
export type { Certificate } from './x509/certificate.js';
export { verifyCertificateChain, verifyCertificateChainToAny, deviceIdentity } from './x509/chain.js';
export type { VerifyChainOptions } from './x509/chain.js';
export { RECEIPT_PAYLOAD_TYPE } from './receipt/types.js';
export type { ReceiptPayload, ReceiptMember, OsResult, ActivationOutcome, HealthVerdict, MemberVerdict } from './receipt/types.js';
export { validateReceiptPayload } from './receipt/validate.js';
export { buildReceiptPayload } from './receipt/build.js';
export type { ReceiptFacts } from './receipt/build.js';
export { signReceipt } from './receipt/sign.js';
export type { SignReceiptOptions } from './receipt/sign.js';
export { verifyReceipt } from './receipt/verify.js';
export type { VerifyReceiptOptions, VerifiedReceipt } from './receipt/verify.js';
export { checkReceiptAgainstRelease } from './receipt/check.js';

// delta updates and delivery reports
export { DELTA_FORMAT, deltaTargetPath, deltaDescriptorOf, deltaEligible, deltaWindowLog, zstdDeltaArgs } from './delivery/delta.js';
export type { DeltaDescriptor } from './delivery/delta.js';
export { DELIVERY_METHODS, DELTA_FALLBACKS, validateDeliveryReport } from './delivery/report.js';
export type { DeliveryMethod, DeltaFallback, MemberDelivery, DeliveryReport } from './delivery/report.js';
export type { ReceiptExpectation } from './receipt/check.js';
