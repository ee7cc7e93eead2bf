/**
 * Hostile values for the bad-input property tests (fast-check arbitraries): strings with
 * NUL, other control characters and lone surrogates, oversized strings, number literals
 * beyond every integer type, JSON of the wrong type and deep nesting, and the encoders
 * that put them on the wire as they are (WTF-8 percent-encoding keeps a lone surrogate a
 * lone surrogate; raw JSON literals keep `1e400` from becoming `null`).
 */
import fc from 'fast-check';

/** Controls the server refuses (C0 but TAB/LF/CR, DEL, C1) and both kinds of lone surrogate. */
export const CONTROL_CHARACTERS = ['\u0000', '\u0001', '\u0008', '\u000b', '\u001b', '\u001f', '\u007f', '\u0085', '\u009b', '\ud800', '\udfff'] as const;

const TRICKY = [
  '',
  ' ',
  '.',
  '..',
  '../../etc/passwd',
  '%00',
  '%',
  '%zz',
  '\\',
  '"',
  "'",
  '{}',
  '[]',
  'null',
  'true',
  '-1',
  '-0',
  '0',
  '1.5',
  '1e400',
  '99999999999999999999',
  '0x10',
  'NaN',
  'Infinity',
  '__proto__',
  'constructor',
  'prototype',
  '00000000-0000-0000-0000-000000000000',
  'a'.repeat(64),
  'a'.repeat(65),
  '😀',
  'é',
  '\u2028',
  '\ufeff',
  '\uffff',
  '\t\n\r',
  "' OR 1=1 --",
  '$1',
  '%s',
  'admin',
];

const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

export const controlString = fc
  .tuple(fc.string({ maxLength: 6 }), fc.constantFrom(...CONTROL_CHARACTERS), fc.string({ maxLength: 6 }))
  .map(([a, c, b]) => a + c + b);

/** Up to 65 KiB: past every maxLength, under the 1 MiB body limit. */
export const oversizedString = fc.integer({ min: 1, max: 5000 }).map((n) => 'x'.repeat(n * 13));

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  controlString,
  fc.string({ unit: codeUnit, maxLength: 24 }),
  fc.string({ unit: 'grapheme', maxLength: 16 }),
  oversizedString,
  fc.constantFrom(...TRICKY),
);

/** Number literals as written in JSON or a query string, including ones no integer type holds. */
export const numberLiteral: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)),
  fc.constantFrom(
    '-1',
    '0',
    '1.5',
    '-1.5',
    '1e400',
    '-1e400',
    '1e-400',
    '99999999999999999999',
    '2147483647',
    '2147483648',
    '9007199254740993',
    '7776001',
    '100001',
  ),
);

/** A JSON fragment written as is (a number literal, or nesting deeper than any parser's stack). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** A JSON value to write: plain values, or `RawJson` for a literal JSON cannot hold as a number (`1e400`, `-0.0`). */
export type Json = null | boolean | number | string | RawJson | Json[] | { [key: string]: Json };

export const deepJson = fc
  .tuple(fc.integer({ min: 1, max: 200_000 }), fc.boolean())
  .map(([n, arrays]) => new RawJson(arrays ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`));

/** Any JSON value of a type no schema field expects, with hostile leaves. */
export const hostileJson: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 3, arbitrary: numberLiteral.map((t) => new RawJson(t)) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.array(
      fc.oneof(
        hostileString,
        numberLiteral.map((t) => new RawJson(t)),
      ),
      { maxLength: 3 },
    ),
  },
  { weight: 1, arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 3 }) },
  { weight: 1, arbitrary: deepJson },
);

/** JSON text; RawJson fragments are written verbatim, strings as JSON.stringify writes them. */
export function writeJson(value: Json | undefined): string {
  if (value === undefined) return 'null';
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(writeJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${writeJson(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const HAS_LONE_SURROGATE = new RegExp(LONE_SURROGATE.source);

/** Bytes of `s` with a lone surrogate written as its three WTF-8 bytes (what a careless client sends), never U+FFFD. */
export function wtf8Bytes(s: string): Buffer {
  const chunks: Buffer[] = [];
  let at = 0;
  for (const m of s.matchAll(LONE_SURROGATE)) {
    const unit = m[0].charCodeAt(0);
    chunks.push(Buffer.from(s.slice(at, m.index), 'utf8'), Buffer.from([0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 63), 0x80 | (unit & 63)]));
    at = m.index + 1;
  }
  chunks.push(Buffer.from(s.slice(at), 'utf8'));
  return Buffer.concat(chunks);
}

/** Percent-encodes the WTF-8 bytes of `s` but the unreserved ones and `keep` (`/` in a wildcard path). */
export function percentEncode(s: string, keep = ''): string {
  if (!HAS_LONE_SURROGATE.test(s)) {
    // encodeURIComponent leaves !'()* as they are: valid in a path segment and a query value
    const encoded = encodeURIComponent(s);
    return keep.includes('/') ? encoded.replaceAll('%2F', '/') : encoded;
  }
  let out = '';
  for (const byte of wtf8Bytes(s)) {
    const ch = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(ch) || (byte < 0x80 && keep.includes(ch)) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
