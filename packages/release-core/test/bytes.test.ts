import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromBase64Strict, pureBase64Decode, toBase64 } from '../src/encoding/bytes.js';

describe('strict base64', () => {
  it('round-trips every length with both decoders', () => {
    for (let n = 0; n < 40; n++) {
      const b = new Uint8Array(randomBytes(n));
      const t = toBase64(b);
      expect(t).toBe(Buffer.from(b).toString('base64'));
      expect(Buffer.from(fromBase64Strict(t)!).equals(b)).toBe(true);
      expect(Buffer.from(pureBase64Decode(t)!).equals(b)).toBe(true);
    }
  });
  it.each([
    ['missing padding', 'YQ'],
    ['URL-safe alphabet', 'a-_b'],
    ['whitespace', 'YW Jj'],
    ['newline', 'YWJj\n'],
    ['non-zero trailing bits (1 byte)', 'YR=='],
    ['non-zero trailing bits (2 bytes)', 'YWK='],
    ['padding in the middle', 'YQ==YWJj'],
    ['non-ASCII', 'YWJ\u00e9'],
  ])('refuses %s in both decoders', (_n, text) => {
    expect(fromBase64Strict(text)).toBeUndefined();
    expect(pureBase64Decode(text.length % 4 === 0 ? text : `${text}`)).toBeUndefined();
  });
});
