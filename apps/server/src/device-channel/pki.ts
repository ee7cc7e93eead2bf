import { randomBytes, webcrypto } from 'node:crypto';
import { encodePem } from '@svc/release-core';

type CryptoKey = webcrypto.CryptoKey;
import { x509 } from '@svc/release-core/x509';
import { certSigner, type CertSigner } from './device-cert.js';

/**
 * X.509 building blocks of the device channel: P-256 CAs and certificates issued from a CSR
 * (fingerprints and PEM text come from release-core's `sha256Digest` and `encodePem`).
 * Everything is ECDSA P-256 with SHA-256 (contracts §4); webcrypto does the math,
 * @peculiar/x509 the ASN.1.
 */

export const P256_KEY = { name: 'ECDSA', namedCurve: 'P-256' } as const;
export const P256_SIGN = { name: 'ECDSA', hash: 'SHA-256' } as const;

export interface CaMaterial {
  cert: x509.X509Certificate;
  certDer: Uint8Array;
  key: CryptoKey;
  /** The same key as node:crypto, for device certificates (device-cert.ts). */
  signer: CertSigner;
}

function serial(): string {
  // 16 random bytes with the top bit cleared: a positive INTEGER, never reused in practice.
  const b = randomBytes(16);
  b[0] = (b[0] ?? 0) & 0x7f;
  return b.toString('hex');
}

/** A new self-signed P-256 CA; the PKCS#8 PEM of its key is returned for the caller to store 0600. */
export async function createCa(commonName: string, now: Date, validDays: number): Promise<{ certDer: Uint8Array; keyPem: string }> {
  const keys = await webcrypto.subtle.generateKey(P256_KEY, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + validDays * 86_400_000),
    signingAlgorithm: P256_SIGN,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = new Uint8Array(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { certDer: new Uint8Array(cert.rawData), keyPem: encodePem(pkcs8, 'PRIVATE KEY') };
}

export async function loadCa(certDer: Uint8Array, keyPem: string): Promise<CaMaterial> {
  const b64 = keyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const key = await webcrypto.subtle.importKey('pkcs8', Buffer.from(b64, 'base64'), P256_KEY, false, ['sign']);
  return { cert: new x509.X509Certificate(certDer), certDer, key, signer: certSigner(certDer, keyPem) };
}

export interface IssueOptions {
  subjectCN: string;
  publicKey: x509.PublicKey;
  usage: 'clientAuth' | 'serverAuth';
  sanUris?: string[];
  dnsNames?: string[];
  ips?: string[];
  notBefore: Date;
  notAfter: Date;
}

/** A leaf certificate signed by `ca`. */
export async function issueCertificate(ca: CaMaterial, o: IssueOptions): Promise<Uint8Array> {
  const san = [
    ...(o.sanUris ?? []).map((value) => ({ type: 'url' as const, value })),
    ...(o.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(o.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${o.subjectCN}`,
    issuer: ca.cert.subject,
    notBefore: o.notBefore,
    notAfter: o.notAfter,
    publicKey: o.publicKey,
    signingKey: ca.key,
    signingAlgorithm: P256_SIGN,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([o.usage === 'clientAuth' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(san, false),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
      await x509.SubjectKeyIdentifierExtension.create(o.publicKey),
    ],
  });
  return new Uint8Array(cert.rawData);
}
