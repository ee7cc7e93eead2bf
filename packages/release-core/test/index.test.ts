import { describe, expect, it } from 'vitest';
import * as api from '@svc/release-core';

// The public surface other packages code against (API.md). Changing it is a deliberate act:
// update API.md and this list together.
describe('@svc/release-core exports', () => {
  it('exports exactly the documented names', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'ARTIFACT_KINDS',
        'COMPONENT_KINDS',
        'CodedError',
        'DEFAULT_CLOCK_SKEW_SECONDS',
        'IDENTIFIER_PATTERNS',
        'LIMITS',
        'MEMBER_KINDS',
        'OS_BUNDLE_KIND',
        'RAUC_MEDIA_TYPE',
        'RECEIPT_PAYLOAD_TYPE',
        'REFUSED_KINDS',
        'RELEASE_ERROR_CODES',
        'RELEASE_PAYLOAD_TYPE',
        'ReleaseError',
        'buildReceiptPayload',
        'canonicalize',
        'certificateSpki',
        'checkReceiptAgainstRelease',
        'decodePem',
        'deviceIdentity',
        'digestFromHex',
        'digestHex',
        'encodePem',
        'envelopeBytes',
        'envelopeDigest',
        'generateKeyPair',
        'hashedTargetPath',
        'isCanonical',
        'isDeviceName',
        'isDigest',
        'isReleaseError',
        'isUuid',
        'keyIdOf',
        'nobleCryptoProvider',
        'nodeCryptoProvider',
        'normalizeUuid',
        'pae',
        'parseCertificateDer',
        'parseCertificatePem',
        'parseCertificatesPem',
        'parseEnvelope',
        'parseFailureThreshold',
        'parsePrivateKeyPem',
        'parsePublicKeyPem',
        'parseWaves',
        'privateKeyFromPkcs8Der',
        'publicKeyFromSpkiDer',
        'sha256Digest',
        'signEnvelope',
        'signReceipt',
        'signRelease',
        'targetPolicyDigest',
        'transactionMembers',
        'tufKeyId',
        'validateReceiptPayload',
        'validateReleasePayload',
        'checkHealthPolicy',
        'verifyCertificateChain',
        'verifyCertificateChainToAny',
        'verifyEnvelope',
        'verifyReceipt',
        'verifyRelease',
      ].sort(),
    );
  });
  it('payload types are the contract strings', () => {
    expect(api.RELEASE_PAYLOAD_TYPE).toBe('svc.release.v1');
    expect(api.RECEIPT_PAYLOAD_TYPE).toBe('svc.release-receipt.v1');
  });
});
