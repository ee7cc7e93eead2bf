import { describe, expect, it } from 'vitest';
import { keyIdOf, nobleCryptoProvider, nodeCryptoProvider, parsePublicKeyPem, tufKeyId } from '../src/index.js';
import { olpcCanonicalText } from '../src/encoding/olpc.js';
import { loadVector, refusal } from './helpers/vectors.js';

interface TufKeyIdCase {
  name: string;
  keytype: string;
  scheme: string;
  keyval: Record<string, string>;
  canonical: string;
  keyid: string;
  public_key_pem?: string;
}

// Computed by scripts/make-tuf-key-ids.py with securesystemslib's OLPC encoder and hashlib.
const cases = loadVector<TufKeyIdCase[]>('tuf-key-ids.json');

describe('tufKeyId (TUF specification KEYID)', () => {
  describe.each([nodeCryptoProvider, nobleCryptoProvider])('with the $name provider', (crypto) => {
    it.each(cases.map((c) => [c.name, c]))('%s', (_name, c) => {
      expect(tufKeyId(c.keytype, c.scheme, c.keyval, crypto)).toBe(c.keyid);
    });
  });

  it.each(cases.map((c) => [c.name, c]))('hashes the OLPC canonical text: %s', (_name, c) => {
    expect(olpcCanonicalText({ keytype: c.keytype, scheme: c.scheme, keyval: c.keyval })).toBe(c.canonical);
  });

  it('names the raw Ed25519 key of a PEM, and differs from the contracts sha256:+SPKI id of the same key', () => {
    for (const c of cases.filter((v) => v.public_key_pem !== undefined)) {
      const key = parsePublicKeyPem(c.public_key_pem!);
      expect(Buffer.from(key.raw).toString('hex')).toBe(c.keyval['public']);
      expect(tufKeyId('ed25519', 'ed25519', { public: Buffer.from(key.raw).toString('hex') })).toBe(c.keyid);
      expect(keyIdOf(key.spki)).not.toBe(`sha256:${c.keyid}`);
    }
  });

  it('depends on keytype and scheme, not only on the key value', () => {
    const [first] = cases;
    expect(tufKeyId('ed25519', 'ed25519', first!.keyval)).toBe(first!.keyid);
    expect(tufKeyId('ed25519', 'other', first!.keyval)).not.toBe(first!.keyid);
    expect(tufKeyId('rsa', 'ed25519', first!.keyval)).not.toBe(first!.keyid);
  });

  it('refuses what has no OLPC canonical form', () => {
    expect(refusal(() => tufKeyId('ed25519', 'ed25519', { public: 'ab\uD800' })).code).toBe('CANONICALIZE_FAILED');
    expect(refusal(() => tufKeyId('ed25519', 'ed25519', { public: 1 as unknown as string })).message).toMatch(/keyval\.public/);
    expect(refusal(() => tufKeyId('', 'ed25519', { public: 'ab' })).message).toMatch(/keytype/);
  });
});
