import * as nodeCrypto from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { PrivateKey, PublicKey } from '../keys/types.js';
import { LIMITS } from '../limits.js';
import type { CryptoProvider } from './provider.js';

/*
 * The only module (besides tests and scripts) that imports node:crypto, so a browser bundle
 * can swap it out and use the noble provider.
 *
 * Building a KeyObject from DER costs about as much as a verification, and a server or agent
 * verifies with the same few keys all day. Public keys are remembered by key id, because the
 * server reads its authorizer keys from the database per request and so hands in a new
 * PublicKey object each time; an entry is used only when its SPKI bytes equal the key's, so a
 * key object that claims another key's id gets its own import, never the other key. Bounded
 * by LIMITS.keyObjectCacheEntries, least recently used out first. Private keys (signing, a
 * handful per process) stay cached per key object.
 *
 * KeyObjects are made from a JWK of the key's raw parts, not from its DER: OpenSSL 3 decodes DER
 * and PEM through its provider-based decoder chain, about 300 us for a PKCS#8 key and 70-100 us
 * for an SPKI, against 5-50 us for the JWK import (the raw parts were already checked when the
 * PublicKey or PrivateKey was made: keys.ts). A fleet's receipts each bring a new device key.
 */
interface CachedPublicKey {
  readonly spki: Uint8Array;
  readonly ko: KeyObject;
}
const publicKeyObjects = new Map<string, CachedPublicKey>();
/** the entry last used with a key object, so the same object skips the id lookup (still SPKI-checked) */
const lastEntry = new WeakMap<PublicKey, CachedPublicKey>();
const privateKeyObjects = new WeakMap<PrivateKey, KeyObject>();

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function publicKeyObject(key: PublicKey): KeyObject {
  const last = lastEntry.get(key);
  if (last && publicKeyObjects.get(key.keyid) === last && sameBytes(last.spki, key.spki)) return last.ko;
  const hit = publicKeyObjects.get(key.keyid);
  if (hit && sameBytes(hit.spki, key.spki)) {
    // most recently used goes last
    publicKeyObjects.delete(key.keyid);
    publicKeyObjects.set(key.keyid, hit);
    lastEntry.set(key, hit);
    return hit.ko;
  }
  // Own copy of the bytes compared on later hits: the caller's array may change.
  const spki = key.spki.slice();
  const entry = { spki, ko: nodeCrypto.createPublicKey({ key: publicJwk(key.alg, key.raw), format: 'jwk' }) };
  publicKeyObjects.delete(key.keyid);
  publicKeyObjects.set(key.keyid, entry);
  lastEntry.set(key, entry);
  if (publicKeyObjects.size > LIMITS.keyObjectCacheEntries) publicKeyObjects.delete(publicKeyObjects.keys().next().value!);
  return entry.ko;
}

/** Public KeyObjects held now (tests check the bound). */
export function keyObjectCacheSize(): number {
  return publicKeyObjects.size;
}

const b64url = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64url');

/** RFC 7517/8037 JWK of a public key from its raw form: the Ed25519 key, or the P-256 point 04 || x || y. */
function publicJwk(alg: PublicKey['alg'], raw: Uint8Array): nodeCrypto.JsonWebKey {
  return alg === 'ed25519'
    ? { kty: 'OKP', crv: 'Ed25519', x: b64url(raw) }
    : { kty: 'EC', crv: 'P-256', x: b64url(raw.subarray(1, 33)), y: b64url(raw.subarray(33, 65)) };
}

function privateKeyObject(key: PrivateKey): KeyObject {
  let ko = privateKeyObjects.get(key);
  if (!ko) {
    ko = nodeCrypto.createPrivateKey({ key: { ...publicJwk(key.alg, key.publicKey.raw), d: b64url(key.raw) }, format: 'jwk' });
    privateKeyObjects.set(key, ko);
  }
  return ko;
}

function asBytes(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

// crypto.hash (Node >= 20.12) hashes in one call without a Hash object: cheaper on the hot path.
const oneShot = (nodeCrypto as { hash?: (alg: string, data: Uint8Array, enc: 'buffer') => Buffer }).hash;

export const nodeCryptoProvider: CryptoProvider = {
  name: 'node',
  sha256(data) {
    return asBytes(oneShot ? oneShot('sha256', data, 'buffer') : nodeCrypto.createHash('sha256').update(data).digest());
  },
  verifyEd25519(key, message, signature) {
    if (key.alg !== 'ed25519' || signature.length !== 64) return false;
    return nodeCrypto.verify(null, message, publicKeyObject(key), signature);
  },
  signEd25519(key, message) {
    if (key.alg !== 'ed25519') throw new TypeError('signEd25519 needs an Ed25519 private key');
    return asBytes(nodeCrypto.sign(null, message, privateKeyObject(key)));
  },
  verifyP256(key, message, derSignature) {
    if (key.alg !== 'p256') return false;
    try {
      // a KeyObject's dsaEncoding defaults to 'der'; no options object to parse per call
      return nodeCrypto.verify('sha256', message, publicKeyObject(key), derSignature);
    } catch {
      // OpenSSL throws on some malformed DER instead of returning false.
      return false;
    }
  },
  signP256(key, message) {
    if (key.alg !== 'p256') throw new TypeError('signP256 needs a P-256 private key');
    return asBytes(nodeCrypto.sign('sha256', message, { key: privateKeyObject(key), dsaEncoding: 'der' }));
  },
  p256PublicPoint(secret) {
    // OpenSSL's EC arithmetic through the ECDH object: ~20 us, against ~300 us for a PKCS#8 import
    const ecdh = nodeCrypto.createECDH('prime256v1');
    ecdh.setPrivateKey(Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength));
    return asBytes(ecdh.getPublicKey());
  },
};
