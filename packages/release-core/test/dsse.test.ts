import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CryptoProvider,
  type Envelope,
  generateKeyPair,
  isReleaseError,
  nobleCryptoProvider,
  nodeCryptoProvider,
  pae,
  parseEnvelope,
  parsePublicKeyPem,
  type ReleaseErrorCode,
  signEnvelope,
  verifyEnvelope,
} from '../src/index.js';
import { openssl, opensslStatus, requireTool, withTempDir } from './helpers/tools.js';

const enc = new TextEncoder();
const T = 'svc.release.v1';

function codeOf(fn: () => unknown): ReleaseErrorCode | undefined {
  try {
    fn();
  } catch (e) {
    if (isReleaseError(e)) return e.code;
    throw e;
  }
  return undefined;
}

describe('PAE', () => {
  it('matches the DSSE v1 definition', () => {
    expect(new TextDecoder().decode(pae('http://example.com/HelloWorld', enc.encode('hello world')))).toBe(
      'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
    );
    // lengths are byte counts, not UTF-16 lengths
    expect(new TextDecoder().decode(pae('t', enc.encode('\u00e9')))).toBe('DSSEv1 1 t 2 \u00e9');
  });
});

const providers: [string, CryptoProvider][] = [
  ['node', nodeCryptoProvider],
  ['noble', nobleCryptoProvider],
];

describe.each(providers)('DSSE sign/verify with the %s provider', (_n, crypto) => {
  const ed = generateKeyPair('ed25519');
  const ec = generateKeyPair('p256');
  const other = generateKeyPair('ed25519');
  const payload = enc.encode('{"a":1}');

  it.each([ed, ec])('signs and verifies (%#)', (key) => {
    const env = signEnvelope(T, payload, key, { crypto });
    const parsed = parseEnvelope(JSON.stringify(env));
    const r = verifyEnvelope(parsed, [other.publicKey, key.publicKey], { crypto, payloadType: T });
    expect(Buffer.from(r.payload).toString()).toBe('{"a":1}');
    expect(r.keyid).toBe(key.publicKey.keyid);
    // and the other provider agrees
    const otherProvider = crypto === nodeCryptoProvider ? nobleCryptoProvider : nodeCryptoProvider;
    expect(verifyEnvelope(env, [key.publicKey], { crypto: otherProvider }).keyid).toBe(key.publicKey.keyid);
  });

  it('refuses a modified payload, a wrong payload type and an untrusted key', () => {
    const env = signEnvelope(T, payload, ed, { crypto });
    const tampered = { ...env, payload: Buffer.from('{"a":2}').toString('base64') };
    expect(codeOf(() => verifyEnvelope(tampered, [ed.publicKey], { crypto }))).toBe('SIGNATURE_INVALID');
    const retyped = { ...env, payloadType: 'svc.release-receipt.v1' };
    expect(codeOf(() => verifyEnvelope(retyped, [ed.publicKey], { crypto }))).toBe('SIGNATURE_INVALID');
    expect(codeOf(() => verifyEnvelope(retyped, [ed.publicKey], { crypto, payloadType: T }))).toBe('PAYLOAD_TYPE_UNKNOWN');
    expect(codeOf(() => verifyEnvelope(env, [other.publicKey], { crypto }))).toBe('KEY_UNTRUSTED');
    expect(codeOf(() => verifyEnvelope(env, [ed.publicKey], { crypto, algorithms: ['p256'] }))).toBe('KEY_UNTRUSTED');
  });

  it('counts a threshold over distinct trusted key ids', () => {
    const e1 = signEnvelope(T, payload, ed, { crypto });
    const e2 = signEnvelope(T, payload, other, { crypto });
    const both: Envelope = { ...e1, signatures: [...e1.signatures, ...e2.signatures] };
    expect(verifyEnvelope(both, [ed.publicKey, other.publicKey], { crypto, threshold: 2 }).keyids).toHaveLength(2);
    expect(codeOf(() => verifyEnvelope(e1, [ed.publicKey, other.publicKey], { crypto, threshold: 2 }))).toBe('KEY_UNTRUSTED');
    // the same key listed twice as trusted still counts once
    expect(codeOf(() => verifyEnvelope(e1, [ed.publicKey, ed.publicKey], { crypto, threshold: 2 }))).toBe('KEY_UNTRUSTED');
    // one good and one bad trusted signature: threshold 2 fails as invalid
    const bad: Envelope = { ...both, signatures: [both.signatures[0]!, { ...both.signatures[1]!, sig: both.signatures[0]!.sig }] };
    expect(codeOf(() => verifyEnvelope(bad, [ed.publicKey, other.publicKey], { crypto, threshold: 2 }))).toBe('SIGNATURE_INVALID');
  });
});

describe('strict envelope parsing', () => {
  const ed = generateKeyPair('ed25519');
  const good = signEnvelope(T, enc.encode('{"a":1}'), ed);
  const sig0 = good.signatures[0]!;
  const cases: [string, unknown, ReleaseErrorCode][] = [
    ['non-object', '[1]', 'ENVELOPE_MALFORMED'],
    ['null', null, 'ENVELOPE_MALFORMED'],
    ['not JSON', '{', 'ENVELOPE_MALFORMED'],
    ['extra field', { ...good, extra: 1 }, 'ENVELOPE_MALFORMED'],
    ['missing payload', { payloadType: T, signatures: good.signatures }, 'ENVELOPE_MALFORMED'],
    ['unknown payloadType', { ...good, payloadType: 'application/vnd.in-toto+json' }, 'PAYLOAD_TYPE_UNKNOWN'],
    ['payload not base64', { ...good, payload: 'e30' }, 'ENVELOPE_MALFORMED'],
    ['payload URL-safe base64', { ...good, payload: good.payload.replace(/=+$/, '') }, 'ENVELOPE_MALFORMED'],
    ['empty signatures', { ...good, signatures: [] }, 'SIGNATURES_EMPTY'],
    ['signature extra field', { ...good, signatures: [{ ...sig0, cert: 'x' }] }, 'ENVELOPE_MALFORMED'],
    ['signature missing keyid', { ...good, signatures: [{ sig: sig0.sig }] }, 'ENVELOPE_MALFORMED'],
    ['bad keyid', { ...good, signatures: [{ ...sig0, keyid: 'abc' }] }, 'ENVELOPE_MALFORMED'],
    ['sig not base64', { ...good, signatures: [{ ...sig0, sig: 'a b=' }] }, 'ENVELOPE_MALFORMED'],
    ['duplicate keyid', { ...good, signatures: [sig0, sig0] }, 'SIGNATURE_DUPLICATE_KEYID'],
    ['too many signatures', { ...good, signatures: Array.from({ length: 17 }, () => sig0) }, 'SIZE_LIMIT'],
  ];
  it.each(cases)('%s -> %s', (_n, input, code) => expect(codeOf(() => parseEnvelope(input))).toBe(code));
  it('caps the size before parsing', () => {
    expect(codeOf(() => parseEnvelope(JSON.stringify(good), { maxBytes: 100 }))).toBe('SIZE_LIMIT');
    expect(codeOf(() => parseEnvelope(enc.encode(JSON.stringify(good)), { maxBytes: 100 }))).toBe('SIZE_LIMIT');
    expect(codeOf(() => parseEnvelope(good, { maxBytes: 4 }))).toBe('SIZE_LIMIT');
    expect(parseEnvelope(enc.encode(JSON.stringify(good))).payload).toBe(good.payload);
  });
  it('verifyEnvelope applies the same strict parsing to a plain object', () => {
    expect(codeOf(() => verifyEnvelope({ ...good, signatures: [sig0, sig0] }, [ed.publicKey]))).toBe('SIGNATURE_DUPLICATE_KEYID');
  });
});

describe.runIf(requireTool('openssl'))('DSSE interop with the OpenSSL CLI', () => {
  const tmp = withTempDir();
  afterAll(() => tmp.cleanup());
  it('openssl pkeyutl -verify -rawin accepts our Ed25519 signature over PAE, and refuses a changed PAE', () => {
    for (const crypto of [nodeCryptoProvider, nobleCryptoProvider]) {
      const key = generateKeyPair('ed25519');
      const payload = enc.encode('{"hello":"world"}');
      const env = signEnvelope(T, payload, key, { crypto });
      const f = (n: string) => join(tmp.dir, `${crypto.name}-${n}`);
      writeFileSync(f('pub.pem'), key.publicKey.pem);
      writeFileSync(f('pae'), pae(T, payload));
      writeFileSync(f('bad'), pae('svc.release-receipt.v1', payload));
      writeFileSync(f('sig'), Buffer.from(env.signatures[0]!.sig, 'base64'));
      const args = (m: string) => ['pkeyutl', '-verify', '-pubin', '-inkey', f('pub.pem'), '-rawin', '-in', f(m), '-sigfile', f('sig')];
      expect(opensslStatus(args('pae')).status).toBe(0);
      expect(opensslStatus(args('bad')).status).not.toBe(0);
    }
  });
  it('an Ed25519 signature made by openssl over PAE verifies in both providers', () => {
    const keyPath = join(tmp.dir, 'ossl-ed.pem');
    openssl(['genpkey', '-algorithm', 'ed25519', '-out', keyPath]);
    const pubPem = openssl(['pkey', '-in', keyPath, '-pubout']).toString();
    const payload = enc.encode('{"x":[1,2]}');
    writeFileSync(join(tmp.dir, 'pae2'), pae(T, payload));
    const sig = openssl(['pkeyutl', '-sign', '-inkey', keyPath, '-rawin', '-in', join(tmp.dir, 'pae2')]);
    expect(sig.length).toBe(64);
    const pub = parsePublicKeyPem(pubPem);
    const env: Envelope = { payloadType: T, payload: Buffer.from(payload).toString('base64'), signatures: [{ keyid: pub.keyid, sig: sig.toString('base64') }] };
    for (const crypto of [nodeCryptoProvider, nobleCryptoProvider]) expect(verifyEnvelope(env, [pub], { crypto }).keyid).toBe(pub.keyid);
  });
});
