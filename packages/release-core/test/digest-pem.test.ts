import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodePem, digestFromHex, digestHex, encodePem, isDigest, keyIdOf, parsePublicKeyPem, sha256Digest } from '../src/index.js';
import { refusal, vectorsDir } from './helpers/vectors.js';

const pemFile = (name: string) => readFileSync(join(vectorsDir, 'keys', name), 'utf8');
const hexOf = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

describe('sha256 digests (contracts §1)', () => {
  it('build from bytes or from hex, and back to hex', () => {
    const bytes = new TextEncoder().encode('svc');
    const d = sha256Digest(bytes);
    expect(d).toBe(`sha256:${hexOf(bytes)}`);
    expect(digestFromHex(hexOf(bytes))).toBe(d);
    expect(digestHex(d)).toBe(hexOf(bytes));
    expect(isDigest(d)).toBe(true);
  });

  it.each([
    ['upper-case hex', hexOf('x').toUpperCase()],
    ['63 characters', hexOf('x').slice(1)],
    ['65 characters', `${hexOf('x')}0`],
    ['already prefixed', `sha256:${hexOf('x')}`],
    ['empty', ''],
  ])('digestFromHex refuses %s (a caller mistake: TypeError)', (_n, hex) => {
    expect(() => digestFromHex(hex)).toThrow(TypeError);
  });

  it('isDigest is the contract form only', () => {
    for (const bad of [hexOf('x'), `SHA256:${hexOf('x')}`, `sha256:${hexOf('x').toUpperCase()}`, `sha512:${hexOf('x')}`, `sha256:${hexOf('x')} `, 42, null]) {
      expect(isDigest(bad)).toBe(false);
    }
  });

  it('a key id is the digest of the SPKI DER', () => {
    const key = parsePublicKeyPem(pemFile('authorizer.pub.pem'));
    expect(keyIdOf(key.spki)).toBe(digestFromHex(hexOf(key.spki)));
  });
});

describe('PEM (RFC 7468)', () => {
  it.each(['device.cert.pem', 'device-ca.cert.pem', 'authorizer.pub.pem', 'device.key.pem'])(
    'encodePem(decodePem(x)) is the file OpenSSL wrote: %s',
    (name) => {
      const pem = pemFile(name);
      const label = /^-----BEGIN ([A-Z ]+)-----/.exec(pem)![1]!;
      const der = decodePem(pem, label);
      expect(Buffer.from(der).equals(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'))).toBe(true);
      expect(encodePem(der, label)).toBe(pem);
    },
  );

  it('reads CRLF line ends; writes 64-character lines and a final newline', () => {
    const pem = pemFile('device.cert.pem');
    const der = decodePem(pem.replace(/\n/g, '\r\n'), 'CERTIFICATE');
    const lines = encodePem(der, 'CERTIFICATE').split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(1, -3).every((l) => l.length === 64)).toBe(true);
  });

  it('refuses another label, trailing data and a bad body, with the code of what was expected', () => {
    const cert = pemFile('device.cert.pem');
    expect(refusal(() => decodePem(cert, 'PUBLIC KEY')).code).toBe('KEY_INVALID');
    expect(refusal(() => decodePem(pemFile('device.pub.pem'), 'CERTIFICATE')).code).toBe('CERT_INVALID');
    expect(refusal(() => decodePem(`${cert}${cert}`, 'CERTIFICATE')).message).toContain('trailing data');
    expect(refusal(() => decodePem('-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n', 'CERTIFICATE')).code).toBe('CERT_INVALID');
    expect(refusal(() => decodePem(cert, 'PUBLIC KEY', 'CERT_INVALID')).code).toBe('CERT_INVALID');
  });
});
