import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { defaultCryptoProvider } from '#crypto/default';
import type { CryptoProvider } from '../crypto/provider.js';
import { sha256Digest } from '../digest.js';
import { DerError, TAG, bitStringBytes, children, expectTag, oid, readWhole, smallInteger, value } from '../encoding/der.js';
import { bytesEqual, concatBytes } from '../encoding/bytes.js';
import { ReleaseError } from '../errors.js';
import { decodePem, encodePem } from './pem.js';
import type { KeyAlgorithm, PrivateKey, PublicKey } from './types.js';

const OID_ED25519 = '1.3.101.112';
const OID_EC_PUBLIC_KEY = '1.2.840.10045.2.1';
const OID_P256 = '1.2.840.10045.3.1.7';

// Fixed DER prefixes of the one encoding each algorithm has (RFC 8410, RFC 5480, RFC 5915).
const SPKI_PREFIX: Record<KeyAlgorithm, Uint8Array> = {
  ed25519: hex('302a300506032b6570032100'),
  p256: hex('3059301306072a8648ce3d020106082a8648ce3d030107034200'),
};
const PKCS8_ED25519_PREFIX = hex('302e020100300506032b657004220420');
const PKCS8_P256_PREFIX = hex('308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420');
const PKCS8_P256_MIDDLE = hex('a144034200');

function hex(s: string): Uint8Array {
  return Uint8Array.from(s.match(/../g)!.map((b) => parseInt(b, 16)));
}

/** contracts §1: `sha256:` + hex SHA-256 of the SubjectPublicKeyInfo DER. */
export function keyIdOf(spkiDer: Uint8Array, crypto: CryptoProvider = defaultCryptoProvider): string {
  return sha256Digest(spkiDer, crypto);
}

function keyError(why: string, cause?: unknown): ReleaseError<'KEY_INVALID'> {
  return new ReleaseError('KEY_INVALID', `invalid key: ${why}`, { cause });
}

/** Parse a SubjectPublicKeyInfo (Ed25519 or P-256 with an uncompressed point). */
export function publicKeyFromSpkiDer(spki: Uint8Array): PublicKey {
  let alg: KeyAlgorithm;
  let raw: Uint8Array;
  try {
    const top = readWhole(spki);
    const [algId, bits] = children(spki, expectTag(top, TAG.SEQUENCE, 'SubjectPublicKeyInfo'));
    const algParts = children(spki, expectTag(algId, TAG.SEQUENCE, 'AlgorithmIdentifier'));
    const algOid = oid(spki, expectTag(algParts[0], TAG.OID, 'algorithm'));
    raw = bitStringBytes(spki, expectTag(bits, TAG.BIT_STRING, 'subjectPublicKey'));
    if (algOid === OID_ED25519 && algParts.length === 1) {
      alg = 'ed25519';
      if (raw.length !== 32) throw new DerError('Ed25519 key must be 32 bytes');
      ed25519.Point.fromBytes(raw); // refuses bytes that are not a curve point
    } else if (algOid === OID_EC_PUBLIC_KEY && algParts.length === 2) {
      const curve = oid(spki, expectTag(algParts[1], TAG.OID, 'namedCurve'));
      if (curve !== OID_P256) throw new DerError(`unsupported curve ${curve} (only P-256)`);
      alg = 'p256';
      if (raw.length !== 65 || raw[0] !== 4) throw new DerError('P-256 key must be an uncompressed point');
      p256.Point.fromBytes(raw);
    } else throw new DerError(`unsupported key algorithm ${algOid} (Ed25519 or P-256)`);
  } catch (e) {
    if (e instanceof ReleaseError) throw e;
    throw keyError(`SubjectPublicKeyInfo: ${(e as Error).message}`, e);
  }
  // Own copy: the key outlives the buffer it came from (a PEM decode, a certificate).
  const der = spki.slice();
  return Object.freeze({ alg, spki: der, keyid: keyIdOf(der), pem: encodePem(der, 'PUBLIC KEY'), raw: raw.slice() });
}

function publicFromRaw(alg: KeyAlgorithm, raw: Uint8Array): PublicKey {
  return publicKeyFromSpkiDer(concatBytes(SPKI_PREFIX[alg], raw));
}

/** Parse PKCS#8 (RFC 5958) of an Ed25519 or P-256 key; the public key is derived and checked. */
export function privateKeyFromPkcs8Der(pkcs8: Uint8Array, crypto: CryptoProvider = defaultCryptoProvider): PrivateKey {
  let alg: KeyAlgorithm;
  let secret: Uint8Array;
  let embeddedPublic: Uint8Array | undefined;
  try {
    const top = children(pkcs8, expectTag(readWhole(pkcs8), TAG.SEQUENCE, 'PrivateKeyInfo'));
    const version = smallInteger(pkcs8, expectTag(top[0], TAG.INTEGER, 'version'));
    if (version !== 0 && version !== 1) throw new DerError(`unsupported PKCS#8 version ${version}`);
    const algParts = children(pkcs8, expectTag(top[1], TAG.SEQUENCE, 'privateKeyAlgorithm'));
    const algOid = oid(pkcs8, expectTag(algParts[0], TAG.OID, 'algorithm'));
    const inner = expectTag(top[2], TAG.OCTET_STRING, 'privateKey');
    if (algOid === OID_ED25519) {
      alg = 'ed25519';
      const seed = readWhole(pkcs8, inner.valueStart, inner.end);
      secret = value(pkcs8, expectTag(seed, TAG.OCTET_STRING, 'CurvePrivateKey'));
      if (secret.length !== 32) throw new DerError('Ed25519 seed must be 32 bytes');
    } else if (algOid === OID_EC_PUBLIC_KEY) {
      const curve = oid(pkcs8, expectTag(algParts[1], TAG.OID, 'namedCurve'));
      if (curve !== OID_P256) throw new DerError(`unsupported curve ${curve} (only P-256)`);
      alg = 'p256';
      const ecKey = children(pkcs8, expectTag(readWhole(pkcs8, inner.valueStart, inner.end), TAG.SEQUENCE, 'ECPrivateKey'));
      if (smallInteger(pkcs8, expectTag(ecKey[0], TAG.INTEGER, 'ECPrivateKey version')) !== 1) throw new DerError('ECPrivateKey version must be 1');
      secret = value(pkcs8, expectTag(ecKey[1], TAG.OCTET_STRING, 'privateKey'));
      if (secret.length !== 32) throw new DerError('P-256 private key must be 32 bytes');
      for (const t of ecKey.slice(2)) {
        if (t.tag === 0xa1) {
          embeddedPublic = bitStringBytes(pkcs8, readWhole(pkcs8, t.valueStart, t.end));
        }
      }
    } else throw new DerError(`unsupported key algorithm ${algOid} (Ed25519 or P-256)`);
  } catch (e) {
    if (e instanceof ReleaseError) throw e;
    throw keyError(`PKCS#8: ${(e as Error).message}`, e);
  }
  let publicRaw: Uint8Array;
  try {
    publicRaw = alg === 'ed25519' ? ed25519.getPublicKey(secret) : crypto.p256PublicPoint(secret);
  } catch (e) {
    throw keyError(`private key scalar out of range`, e);
  }
  if (embeddedPublic && !bytesEqual(embeddedPublic, publicRaw)) throw keyError('PKCS#8 embedded public key does not match the private key');
  // Re-encode in the one canonical form so equal keys have equal bytes and PEM.
  const raw = secret.slice();
  const der = alg === 'ed25519' ? concatBytes(PKCS8_ED25519_PREFIX, raw) : concatBytes(PKCS8_P256_PREFIX, raw, PKCS8_P256_MIDDLE, publicRaw);
  return Object.freeze({ alg, pkcs8: der, publicKey: publicFromRaw(alg, publicRaw), pem: encodePem(der, 'PRIVATE KEY'), raw });
}

/** SPKI PEM (`-----BEGIN PUBLIC KEY-----`); KEY_INVALID otherwise. */
export function parsePublicKeyPem(pem: string): PublicKey {
  return publicKeyFromSpkiDer(decodePem(pem, 'PUBLIC KEY', 'KEY_INVALID'));
}

/** PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`); KEY_INVALID otherwise. */
export function parsePrivateKeyPem(pem: string): PrivateKey {
  return privateKeyFromPkcs8Der(decodePem(pem, 'PRIVATE KEY', 'KEY_INVALID'));
}

/**
 * A fresh key pair. Randomness comes from the platform CSPRNG (crypto.getRandomValues via
 * @noble), so this works without node:crypto.
 */
export function generateKeyPair(alg: KeyAlgorithm): PrivateKey {
  if (alg !== 'ed25519' && alg !== 'p256') throw keyError(`unsupported algorithm ${JSON.stringify(alg)}`);
  const { secretKey } = alg === 'ed25519' ? ed25519.keygen() : p256.keygen();
  const publicRaw = alg === 'ed25519' ? ed25519.getPublicKey(secretKey) : defaultCryptoProvider.p256PublicPoint(secretKey);
  const der = alg === 'ed25519' ? concatBytes(PKCS8_ED25519_PREFIX, secretKey) : concatBytes(PKCS8_P256_PREFIX, secretKey, PKCS8_P256_MIDDLE, publicRaw);
  return privateKeyFromPkcs8Der(der);
}
