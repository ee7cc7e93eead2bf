import * as nodeCrypto from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { PrivateKey, PublicKey } from '../keys/types.js';
import type { CryptoProvider } from './provider.js';

/*
 * The only module (besides tests and scripts) that imports node:crypto, so a browser bundle
 * can swap it out and use the noble provider.
 *
 * KeyObjects are cached per key object: building one from DER costs about as much as a
 * verification, and a server or agent verifies with the same few trusted keys all day.
 * A WeakMap lets the cache die with the key.
 */
const publicKeyObjects = new WeakMap<PublicKey, KeyObject>();
const privateKeyObjects = new WeakMap<PrivateKey, KeyObject>();

function publicKeyObject(key: PublicKey): KeyObject {
  let ko = publicKeyObjects.get(key);
  if (!ko) {
    ko = nodeCrypto.createPublicKey({ key: Buffer.from(key.spki), format: 'der', type: 'spki' });
    publicKeyObjects.set(key, ko);
  }
  return ko;
}

function privateKeyObject(key: PrivateKey): KeyObject {
  let ko = privateKeyObjects.get(key);
  if (!ko) {
    ko = nodeCrypto.createPrivateKey({ key: Buffer.from(key.pkcs8), format: 'der', type: 'pkcs8' });
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
      return nodeCrypto.verify('sha256', message, { key: publicKeyObject(key), dsaEncoding: 'der' }, derSignature);
    } catch {
      // OpenSSL throws on some malformed DER instead of returning false.
      return false;
    }
  },
  signP256(key, message) {
    if (key.alg !== 'p256') throw new TypeError('signP256 needs a P-256 private key');
    return asBytes(nodeCrypto.sign('sha256', message, { key: privateKeyObject(key), dsaEncoding: 'der' }));
  },
};
