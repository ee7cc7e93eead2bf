/**
 * The CPU side of receipt acceptance (spec §2.3 rule 5): bytes, then parse, then the device's
 * signature, the certificate chain and the connection's certificate. A pure function of its
 * input and release-core, with no database and no server state, so it runs the same inline
 * and in a verification thread (device-channel/receipt-verifier.ts).
 */
import {
  parseCertificateDer,
  parseEnvelope,
  sha256Digest,
  verifyReceipt,
  LIMITS,
  RECEIPT_PAYLOAD_TYPE,
  type Certificate,
  type CryptoProvider,
  type ReceiptPayload,
  type Digest,
} from '@svc/release-core';
import { SERVER_TUNING } from '../../limits.js';

export interface ReceiptBytesInput {
  envelopeBytes: Uint8Array;
  /** DER of the tenant device CAs trusted now (the current one, and retired ones inside their trust window). */
  caDers: readonly Uint8Array[];
  tenant: string;
  deviceName: string;
  now: Date;
  /** DER of the connection's client certificate. */
  connectionCertificateDer: Uint8Array;
  /** That certificate was verified against the tenant CA by the call's peer authentication. */
  connectionCertificateVerified: boolean;
  crypto?: CryptoProvider;
}

/** What a verified receipt's bytes say; the signed rollout is checked against it next. */
export interface VerifiedReceiptBytes {
  payload: ReceiptPayload;
  payloadDigest: Digest;
  envelopeDigest: Digest;
}

/** Parsed tenant device CAs by the digest of their DER: a CA certificate's bytes never change meaning. */
const parsedCas = new Map<string, Certificate>();

function caCertificate(der: Uint8Array): Certificate {
  const key = sha256Digest(der);
  let ca = parsedCas.get(key);
  if (ca === undefined) {
    ca = parseCertificateDer(der);
    if (parsedCas.size >= SERVER_TUNING.parsedCaCacheEntries) parsedCas.delete(parsedCas.keys().next().value as string);
    parsedCas.set(key, ca);
  }
  return ca;
}

export function verifyReceiptBytes(input: ReceiptBytesInput): VerifiedReceiptBytes {
  const env = parseEnvelope(input.envelopeBytes, { maxBytes: LIMITS.receiptEnvelopeBytes, payloadTypes: [RECEIPT_PAYLOAD_TYPE] });
  // spec §2.3 rule 5: signature by the device key, certificate chains to a device CA of the tenant,
  // names this device and tenant, and IS the certificate on the mTLS connection
  const v = verifyReceipt(env, {
    ca: input.caDers.map(caCertificate),
    tenant: input.tenant,
    device: input.deviceName,
    now: input.now,
    connectionCertificate: input.connectionCertificateDer,
    connectionCertificateVerified: input.connectionCertificateVerified,
    ...(input.crypto === undefined ? {} : { crypto: input.crypto }),
  });
  return { payload: v.payload, payloadDigest: v.payloadDigest, envelopeDigest: v.envelopeDigest };
}
