import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  generateKeyPair,
  isReleaseError,
  keyIdOf,
  nobleCryptoProvider,
  nodeCryptoProvider,
  parsePrivateKeyPem,
  parsePublicKeyPem,
  privateKeyFromPkcs8Der,
  type ReleaseErrorCode,
} from '../src/index.js';
import { openssl, requireTool, withTempDir } from './helpers/tools.js';

function codeOf(fn: () => unknown): ReleaseErrorCode | undefined {
  try {
    fn();
  } catch (e) {
    if (isReleaseError(e)) return e.code;
    throw e;
  }
  return undefined;
}

describe.each(['ed25519', 'p256'] as const)('%s keys', (alg) => {
  const key = generateKeyPair(alg);
  it('round-trips through PEM and keeps the key id', () => {
    const again = parsePrivateKeyPem(key.pem);
    expect(again.pem).toBe(key.pem);
    expect(again.publicKey.keyid).toBe(key.publicKey.keyid);
    const pub = parsePublicKeyPem(key.publicKey.pem);
    expect(pub.keyid).toBe(key.publicKey.keyid);
    expect(pub.alg).toBe(alg);
  });
  it('key id is sha256 of the SPKI DER, the same with both providers', () => {
    const expected = `sha256:${createHash('sha256').update(key.publicKey.spki).digest('hex')}`;
    expect(key.publicKey.keyid).toBe(expected);
    expect(keyIdOf(key.publicKey.spki, nobleCryptoProvider)).toBe(expected);
  });
});

describe('P-256 public point from the private scalar', () => {
  const prefix = Buffer.from('308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420', 'hex');
  const middle = Buffer.from('a144034200', 'hex');
  const n = Buffer.from('ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551', 'hex');
  it('is the same point with both providers, and the one OpenSSL wrote into the PKCS#8', () => {
    for (let i = 0; i < 20; i++) {
      const k = generateKeyPair('p256');
      const fromNode = nodeCryptoProvider.p256PublicPoint(k.raw);
      expect(Buffer.from(fromNode)).toEqual(Buffer.from(nobleCryptoProvider.p256PublicPoint(k.raw)));
      expect(Buffer.from(fromNode)).toEqual(Buffer.from(k.publicKey.raw));
      expect(privateKeyFromPkcs8Der(k.pkcs8, nobleCryptoProvider).publicKey.keyid).toBe(k.publicKey.keyid);
    }
  });
  it.each([
    ['zero', Buffer.alloc(32)],
    ['the group order n', n],
    ['all ones (above n)', Buffer.alloc(32, 0xff)],
  ])('refuses a scalar of %s with KEY_INVALID, with both providers', (_name, scalar) => {
    const der = Buffer.concat([prefix, scalar, middle, Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)])]);
    expect(codeOf(() => privateKeyFromPkcs8Der(der))).toBe('KEY_INVALID');
    expect(codeOf(() => privateKeyFromPkcs8Der(der, nobleCryptoProvider))).toBe('KEY_INVALID');
  });
  it("refuses a PKCS#8 whose embedded public key is another key's", () => {
    const [a, b] = [generateKeyPair('p256'), generateKeyPair('p256')];
    const der = Buffer.concat([prefix, a.raw, middle, b.publicKey.raw]);
    expect(codeOf(() => privateKeyFromPkcs8Der(der))).toBe('KEY_INVALID');
  });
});

describe('key refusals', () => {
  const ed = generateKeyPair('ed25519');
  it.each([
    ['private key where a public key is expected', () => parsePublicKeyPem(ed.pem)],
    ['public key where a private key is expected', () => parsePrivateKeyPem(ed.publicKey.pem)],
    ['garbage', () => parsePublicKeyPem('hello')],
    ['bad base64 body', () => parsePublicKeyPem('-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n')],
    ['truncated DER', () => parsePublicKeyPem(ed.publicKey.pem.replace(/\n([A-Za-z0-9+/]{4})[A-Za-z0-9+/=]*\n-----END/, '\n$1\n-----END'))],
    ['trailing data after END', () => parsePublicKeyPem(`${ed.publicKey.pem}junk`)],
    ['a non-string', () => parsePublicKeyPem(42 as unknown as string)],
  ])('%s -> KEY_INVALID', (_n, fn) => expect(codeOf(fn)).toBe('KEY_INVALID'));
});

describe.runIf(requireTool('openssl'))('keys made by the OpenSSL CLI', () => {
  const tmp = withTempDir();
  afterAll(() => tmp.cleanup());
  it.each([
    ['ed25519', ['-algorithm', 'ed25519']],
    ['p256', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']],
    ['p256 (named curve param enc explicit)', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-pkeyopt', 'ec_param_enc:named_curve']],
  ])('%s: parse, same PEM and key id as OpenSSL', (_name, args) => {
    const keyPath = join(tmp.dir, `k-${Math.random()}.pem`);
    openssl(['genpkey', ...args, '-out', keyPath]);
    const priv = parsePrivateKeyPem(openssl(['pkey', '-in', keyPath]).toString());
    const pubPem = openssl(['pkey', '-in', keyPath, '-pubout']).toString();
    const pubDer = openssl(['pkey', '-in', keyPath, '-pubout', '-outform', 'DER']);
    const pub = parsePublicKeyPem(pubPem);
    expect(pub.pem).toBe(pubPem);
    expect(priv.publicKey.keyid).toBe(pub.keyid);
    expect(pub.keyid).toBe(`sha256:${createHash('sha256').update(pubDer).digest('hex')}`);
  });
  it('refuses a P-384 key with KEY_INVALID', () => {
    const keyPath = join(tmp.dir, 'p384.pem');
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384', '-out', keyPath]);
    expect(codeOf(() => parsePrivateKeyPem(openssl(['pkey', '-in', keyPath]).toString()))).toBe('KEY_INVALID');
    expect(codeOf(() => parsePublicKeyPem(openssl(['pkey', '-in', keyPath, '-pubout']).toString()))).toBe('KEY_INVALID');
  });
  it('our PKCS#8 PEM is readable by OpenSSL', () => {
    for (const alg of ['ed25519', 'p256'] as const) {
      const k = generateKeyPair(alg);
      const p = join(tmp.dir, `ours-${alg}.pem`);
      writeFileSync(p, k.pem);
      expect(openssl(['pkey', '-in', p, '-pubout']).toString()).toBe(k.publicKey.pem);
    }
  });
});
