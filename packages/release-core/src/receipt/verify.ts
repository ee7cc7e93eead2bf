import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import type { Digest } from '../digest.js';
import { type Envelope, envelopeDigest, parseEnvelope, parsedPayloadBytes, payloadDigest as payloadDigestOf } from '../dsse/envelope.js';
import { verifyEnvelope } from '../dsse/verify.js';
import { bytesEqual, fromBase64Strict } from '../encoding/bytes.js';
import { parseCanonical } from '../encoding/jcs.js';
import { ReleaseError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { cachedCertificate } from '../x509/cache.js';
import type { Certificate } from '../x509/certificate.js';
import { deviceIdentity, verifyCertificateChainToAny } from '../x509/chain.js';
import { RECEIPT_PAYLOAD_TYPE, type ReceiptPayload } from './types.js';
import { validateReceiptPayload } from './validate.js';

export interface VerifyReceiptOptions {
  /**
   * the tenant device CA (parse once with parseCertificatePem and keep it), or several: the
   * current one and the retired ones still trusted after a rotation; the one that issued the
   * embedded certificate is its anchor (at most LIMITS.deviceCaCertificates)
   */
  ca: Certificate | readonly Certificate[];
  tenant: string;
  device: string;
  now: Date;
  /** spec §2.3 rule 5: DER of the mTLS peer certificate; must equal the embedded certificate */
  connectionCertificate?: Uint8Array;
  /**
   * The caller already verified `connectionCertificate`'s signature with `ca`'s key (the mTLS
   * peer authentication of the same call, spec §5 rule 7), so the embedded certificate, which
   * must be byte-equal to it, is not verified a second time. Everything else about it (CA
   * constraints, issuer name, validity at `now`, key usage, names) is still checked.
   */
  connectionCertificateVerified?: boolean;
  maxBytes?: number;
  crypto?: CryptoProvider;
}

export interface VerifiedReceipt {
  payload: ReceiptPayload;
  payloadDigest: Digest;
  envelopeDigest: Digest;
  certificate: Certificate;
}

function invalid(why: string): ReleaseError<'RECEIPT_INVALID'> {
  return new ReleaseError('RECEIPT_INVALID', `invalid receipt: ${why}`);
}

/**
 * The signing key of a receipt travels inside the payload (the device certificate), so unlike a
 * release the payload must be read before the signature can be checked. The exposure is kept
 * small: the bytes are size-capped and must be canonical JSON, only `device.certificate` is
 * read, the certificate must chain to the tenant CA and name the device, and only after its key
 * verified the signature is the rest of the payload validated and trusted.
 */
export function verifyReceipt(env: Envelope | unknown, opts: VerifyReceiptOptions): VerifiedReceipt {
  const crypto = opts.crypto ?? defaultCryptoProvider;
  const parsed =
    typeof env === 'object' && env !== null && parsedPayloadBytes(env as Envelope)
      ? (env as Envelope)
      : parseEnvelope(env, { payloadTypes: [RECEIPT_PAYLOAD_TYPE], maxBytes: opts.maxBytes ?? LIMITS.receiptEnvelopeBytes });
  if (parsed.payloadType !== RECEIPT_PAYLOAD_TYPE)
    throw new ReleaseError('PAYLOAD_TYPE_UNKNOWN', `payloadType ${JSON.stringify(parsed.payloadType)} is not ${RECEIPT_PAYLOAD_TYPE}`);
  const bytes = parsedPayloadBytes(parsed)!;
  // contracts §1: payload bytes MUST equal JCS(parse(bytes))
  const canon = parseCanonical(bytes);
  if (!canon.ok) throw new ReleaseError('PAYLOAD_NOT_CANONICAL', `receipt payload refused: ${canon.reason}`);
  const certificate = embeddedCertificate(canon.value);
  // spec §2.3 rule 5: the embedded certificate must be the certificate on the mTLS connection
  if (opts.connectionCertificate !== undefined && !bytesEqual(certificate.der, opts.connectionCertificate))
    throw new ReleaseError('CERT_IDENTITY_MISMATCH', 'the embedded device certificate is not the certificate of this connection');
  // contracts §4: issued by the per-tenant device CA (one of them after a rotation), valid now
  verifyCertificateChainToAny(certificate, isCertificateList(opts.ca) ? opts.ca : [opts.ca], {
    now: opts.now,
    crypto,
    signatureVerified: opts.connectionCertificate !== undefined && opts.connectionCertificateVerified === true,
  });
  // contracts §4: CN and the one SAN URI name the expected device of the expected tenant
  const id = deviceIdentity(certificate);
  if (id.tenant !== opts.tenant) throw new ReleaseError('CERT_IDENTITY_MISMATCH', `device certificate is for tenant ${id.tenant}, expected ${opts.tenant}`);
  if (id.device !== opts.device)
    throw new ReleaseError('CERT_IDENTITY_MISMATCH', `device certificate names ${JSON.stringify(id.device)}, expected ${JSON.stringify(opts.device)}`);
  // spec §2.3 rule 2 / contracts §1: ECDSA P-256 by the certificate's key, DER signature over PAE
  if (certificate.publicKey.alg !== 'p256') throw new ReleaseError('CERT_INVALID', 'device certificate key is not ECDSA P-256');
  verifyEnvelope(parsed, [certificate.publicKey], { payloadType: RECEIPT_PAYLOAD_TYPE, algorithms: ['p256'], crypto });
  const payload = validateReceiptPayload(canon.value);
  if (payload.tenant !== opts.tenant) throw new ReleaseError('TENANT_MISMATCH', `receipt is for tenant ${payload.tenant}, expected ${opts.tenant}`);
  if (payload.device.name !== id.device)
    throw new ReleaseError(
      'CERT_IDENTITY_MISMATCH',
      `receipt names device ${JSON.stringify(payload.device.name)}, its certificate ${JSON.stringify(id.device)}`,
    );
  return { payload, payloadDigest: payloadDigestOf(parsed, bytes, crypto), envelopeDigest: envelopeDigest(parsed, crypto), certificate };
}

function isCertificateList(ca: Certificate | readonly Certificate[]): ca is readonly Certificate[] {
  return Array.isArray(ca);
}

function embeddedCertificate(value: unknown): Certificate {
  const device = (value as { device?: unknown } | null)?.device;
  const b64 = (device as { certificate?: unknown } | null | undefined)?.certificate;
  if (typeof b64 !== 'string') throw invalid('device.certificate: expected base64 DER of the device certificate');
  return cachedCertificate(b64, () => {
    const der = fromBase64Strict(b64);
    if (!der) throw invalid('device.certificate: not canonical standard base64 with padding');
    return der;
  });
}
