import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { bytesEqual } from '../encoding/bytes.js';
import { ReleaseError } from '../errors.js';
import { isDeviceName, isUuid } from '../identifiers.js';
import { LIMITS } from '../limits.js';
import type { Certificate } from './certificate.js';

export interface VerifyChainOptions {
  now: Date;
  crypto?: CryptoProvider;
  /** The leaf's signature by `ca` was verified by the caller over these very bytes: not checked again. */
  signatureVerified?: boolean;
}

/**
 * A device certificate issued directly by the tenant device CA (contracts §4): the CA is a CA
 * allowed to sign certificates, the names chain, the CA's key signed the leaf, and both are
 * valid at `now`. The CA itself is the trust anchor the caller chose; it is not re-verified.
 */
export function verifyCertificateChain(leaf: Certificate, ca: Certificate, opts: VerifyChainOptions): void {
  const crypto = opts.crypto ?? defaultCryptoProvider;
  const now = opts.now.getTime();
  if (!ca.isCA) throw new ReleaseError('CERT_UNTRUSTED', 'the CA certificate is not a CA (basicConstraints cA is not set)');
  if (ca.keyUsage && !ca.keyUsage.keyCertSign) throw new ReleaseError('CERT_UNTRUSTED', 'the CA certificate may not sign certificates (keyUsage)');
  if (leaf.isCA) throw new ReleaseError('CERT_UNTRUSTED', 'a device certificate must not be a CA');
  for (const [who, cert] of [
    ['device', leaf],
    ['CA', ca],
  ] as const) {
    // RFC 5280 4.2: a critical extension we do not understand means we must not accept it
    if (cert.unknownCriticalExtensions.length)
      throw new ReleaseError('CERT_INVALID', `${who} certificate has unsupported critical extension ${cert.unknownCriticalExtensions.join(', ')}`);
  }
  if (!bytesEqual(leaf.issuer, ca.subject))
    throw new ReleaseError(
      'CERT_UNTRUSTED',
      `device certificate issuer ${JSON.stringify(leaf.issuerCN ?? '?')} is not the tenant device CA ${JSON.stringify(ca.subjectCN)}`,
    );
  const sigOk =
    opts.signatureVerified === true ||
    (leaf.signatureAlgorithm === 'ecdsa-with-SHA256'
      ? ca.publicKey.alg === 'p256' && crypto.verifyP256(ca.publicKey, leaf.tbs, leaf.signature)
      : ca.publicKey.alg === 'ed25519' && crypto.verifyEd25519(ca.publicKey, leaf.tbs, leaf.signature));
  if (!sigOk) throw new ReleaseError('CERT_UNTRUSTED', 'device certificate signature does not verify with the tenant device CA key');
  for (const [who, cert] of [
    ['device', leaf],
    ['CA', ca],
  ] as const) {
    if (now < cert.notBefore.getTime()) throw new ReleaseError('CERT_EXPIRED', `${who} certificate is not valid before ${cert.notBefore.toISOString()}`);
    if (now > cert.notAfter.getTime()) throw new ReleaseError('CERT_EXPIRED', `${who} certificate expired at ${cert.notAfter.toISOString()}`);
  }
  if (leaf.keyUsage && !leaf.keyUsage.digitalSignature)
    throw new ReleaseError('CERT_UNTRUSTED', 'device certificate key may not sign (keyUsage lacks digitalSignature)');
}

/**
 * A device certificate issued by one of several CAs of its tenant (the current device CA and
 * retired ones still trusted after a rotation): the CA whose subject is the leaf's issuer and
 * whose key signed it is the anchor, checked as `verifyCertificateChain` does. Returns that
 * CA. When none fits, the refusal is the one the first candidate (or the first CA) gives.
 */
export function verifyCertificateChainToAny(leaf: Certificate, cas: readonly Certificate[], opts: VerifyChainOptions): Certificate {
  if (cas.length === 0) throw new ReleaseError('CERT_UNTRUSTED', 'no device CA to verify the device certificate against');
  if (cas.length > LIMITS.deviceCaCertificates)
    throw new ReleaseError('SIZE_LIMIT', `${cas.length} CA certificates, over the limit of ${LIMITS.deviceCaCertificates}`);
  const named = cas.filter((ca) => bytesEqual(leaf.issuer, ca.subject));
  if (named.length <= 1) {
    const ca = named[0] ?? cas[0]!;
    verifyCertificateChain(leaf, ca, opts);
    return ca;
  }
  // several CAs with the leaf's issuer name: the signature decides, so it is checked here even
  // when the caller verified it against one of them
  let first: unknown;
  for (const ca of named) {
    try {
      verifyCertificateChain(leaf, ca, { ...opts, signatureVerified: false });
      return ca;
    } catch (e) {
      first ??= e;
    }
  }
  throw first;
}

const SPIFFE = /^spiffe:\/\/([^/]+)\/device\/([^/]+)$/;

/**
 * contracts §4: CN = device name and exactly one SAN URI `spiffe://<tenant uuid>/device/<name>`
 * naming the same device.
 */
export function deviceIdentity(cert: Certificate): { tenant: string; device: string } {
  if (cert.sanUris.length !== 1)
    throw new ReleaseError('CERT_IDENTITY_MISMATCH', `device certificate must have exactly one SAN URI, has ${cert.sanUris.length}`);
  const uri = cert.sanUris[0]!;
  const m = SPIFFE.exec(uri);
  if (!m || !isUuid(m[1]) || !isDeviceName(m[2]))
    throw new ReleaseError('CERT_IDENTITY_MISMATCH', `SAN URI ${JSON.stringify(uri)} is not spiffe://<tenant uuid>/device/<device name>`);
  if (m[2] !== cert.subjectCN)
    throw new ReleaseError(
      'CERT_IDENTITY_MISMATCH',
      `certificate CN ${JSON.stringify(cert.subjectCN)} differs from the SAN URI device ${JSON.stringify(m[2])}`,
    );
  return { tenant: m[1], device: m[2] };
}
