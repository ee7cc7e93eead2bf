import type { webcrypto } from 'node:crypto';
import { x509 } from '@svc/release-core/x509';

const P256_SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;

/**
 * Kept apart from identity.ts so @peculiar/x509 (and its ASN.1 stack) is loaded only when a
 * CSR is made (enrollment, renewal), not by an agent at rest.
 */
/** PKCS#10 CSR (DER) with subject CN = device name, signed by the identity key. */
export async function buildCsr(keys: webcrypto.CryptoKeyPair, deviceName: string): Promise<Buffer> {
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({ name: `CN=${deviceName}`, keys: keys as never, signingAlgorithm: P256_SIGN });
  return Buffer.from(csr.rawData);
}
