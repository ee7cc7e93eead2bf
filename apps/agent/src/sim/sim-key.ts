import { generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { encodePem } from '@svc/release-core';

const generateEc = promisify(generateKeyPair);

/** DER of one TLV with a definite length (short or long form; simulator values stay under 64 KiB). */
function tlv(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : [0x82, n >> 8, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...len]), body]);
}

const hex = (s: string) => Buffer.from(s, 'hex');
/** AlgorithmIdentifier { id-ecPublicKey, prime256v1 } */
const EC_P256_ALG = hex('301306072a8648ce3d020106082a8648ce3d030107');
/** AlgorithmIdentifier { ecdsa-with-SHA256 } */
const ECDSA_SHA256_ALG = hex('300a06082a8648ce3d040302');
/** AttributeType id-at-commonName */
const CN_OID = hex('0603550403');
/** PKCS#8 PrivateKeyInfo for a P-256 key up to its 32-byte private scalar (no public key: OpenSSL and release-core derive it). */
const PKCS8_P256_SCALAR_PREFIX = hex('3041020100301306072a8648ce3d020106082a8648ce3d030107042730250201010420');

/** Length of a P-256 private scalar. */
export const SCALAR_BYTES = 32;

/**
 * A fresh P-256 key and its PKCS#10 CSR (CN = device name), made with node:crypto only: the key
 * pair on libuv's thread pool (`generateKeyPair` async, so several are made at once), the CSR
 * written as a few lines of DER and signed with `crypto.sign`. This is the CSR `buildCsr`
 * makes through @peculiar/x509's ASN.1 schema engine, which cost the simulator most of an
 * enrollment's CPU. Returns the raw private scalar (all the simulator keeps of the key).
 */
export async function simKeyAndCsr(deviceName: string): Promise<{ scalar: Buffer; csrDer: Buffer }> {
  const { privateKey } = await generateEc('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  const scalar = Buffer.from(jwk.d!, 'base64url');
  const point = Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]);
  if (scalar.length !== SCALAR_BYTES || point.length !== 65) throw new Error('P-256 key of unexpected size');
  return { scalar, csrDer: csrDer(deviceName, point, privateKey) };
}

function csrDer(deviceName: string, point: Buffer, key: KeyObject): Buffer {
  const subject = tlv(0x30, tlv(0x31, tlv(0x30, CN_OID, tlv(0x0c, Buffer.from(deviceName, 'utf8')))));
  const spki = tlv(0x30, EC_P256_ALG, tlv(0x03, Buffer.from([0]), point));
  // version 0, subject, key, no attributes ([0] empty)
  const info = tlv(0x30, hex('020100'), subject, spki, hex('a000'));
  const signature = sign('sha256', info, key); // DER ECDSA-Sig-Value
  return tlv(0x30, info, ECDSA_SHA256_ALG, tlv(0x03, Buffer.from([0]), signature));
}

/** PKCS#8 DER of a P-256 key from its raw private scalar. */
export function pkcs8FromScalar(scalar: Uint8Array): Buffer {
  return Buffer.concat([PKCS8_P256_SCALAR_PREFIX, scalar]);
}

/** PKCS#8 PEM of a P-256 key from its raw private scalar (for the connection's OpenSSL context). */
export function keyPemFromScalar(scalar: Uint8Array): string {
  return encodePem(pkcs8FromScalar(scalar), 'PRIVATE KEY');
}
