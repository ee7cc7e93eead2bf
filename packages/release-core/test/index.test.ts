import { describe, expect, it } from 'vitest';
import * as api from '@svc/release-core';

// The public surface other packages code against (API.md). Changing it is a deliberate act:
// update API.md and this list together.
describe('@svc/release-core exports', () => {
  it('exports exactly the documented names', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'DEFAULT_CLOCK_SKEW_SECONDS',
        'DEFAULT_MAX_ENVELOPE_BYTES',
        'DEFAULT_MAX_RECEIPT_BYTES',
        'MEMBER_KINDS',
        'OS_BUNDLE_KIND',
        'RAUC_MEDIA_TYPE',
        'RECEIPT_PAYLOAD_TYPE',
        'REFUSED_KINDS',
        'RELEASE_ERROR_CODES',
        'RELEASE_LIMITS',
        'RELEASE_PAYLOAD_TYPE',
        'ReleaseError',
        'canonicalize',
        'checkReceiptAgainstRelease',
        'deviceIdentity',
        'envelopeBytes',
        'envelopeDigest',
        'generateKeyPair',
        'isCanonical',
        'isDigest',
        'isReleaseError',
        'keyIdOf',
        'nobleCryptoProvider',
        'nodeCryptoProvider',
        'pae',
        'parseCertificateDer',
        'parseCertificatePem',
        'parseEnvelope',
        'parsePrivateKeyPem',
        'parsePublicKeyPem',
        'privateKeyFromPkcs8Der',
        'publicKeyFromSpkiDer',
        'sha256Digest',
        'signEnvelope',
        'signReceipt',
        'signRelease',
        'targetPolicyDigest',
        'transactionMembers',
        'validateReceiptPayload',
        'validateReleasePayload',
        'verifyCertificateChain',
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
