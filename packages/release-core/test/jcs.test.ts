import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalize, isCanonical, isReleaseError } from '../src/index.js';
import { canonicalParsedText } from '../src/encoding/jcs.js';

const dir = join(import.meta.dirname, '..', 'vectors', 'rfc8785');
const files = readdirSync(join(dir, 'input')).filter((f) => f.endsWith('.json'));
const enc = new TextEncoder();

describe('RFC 8785 vectors', () => {
  it('has the six reference files', () => expect(files.length).toBe(6));
  it.each(files)('%s canonicalizes to the reference bytes', (f) => {
    const input = JSON.parse(readFileSync(join(dir, 'input', f), 'utf8')) as unknown;
    const expected = readFileSync(join(dir, 'output', f));
    expect(Buffer.from(canonicalize(input)).equals(expected)).toBe(true);
    expect(isCanonical(new Uint8Array(expected))).toBe(true);
  });
});

describe('strict canonicalization', () => {
  const bad: [string, unknown][] = [
    ['undefined member', { a: undefined }],
    ['undefined item', [1, undefined]],
    ['NaN', { n: Number.NaN }],
    ['Infinity', [Number.POSITIVE_INFINITY]],
    ['lone high surrogate', { s: '\ud800' }],
    ['lone low surrogate in a key', { ['\udc00']: 1 }],
    ['Date', { d: new Date(0) }],
    ['Map', new Map()],
    ['class instance', new (class X {})()],
    ['function', { f: () => 1 }],
    ['bigint', { b: 1n }],
    ['symbol', Symbol('x')],
    // eslint-disable-next-line no-sparse-arrays -- the hole is the input under test
    ['sparse array', [1, , 3]],
  ];
  it.each(bad)('refuses %s with CANONICALIZE_FAILED', (_name, value) => {
    let err: unknown;
    try {
      canonicalize(value);
    } catch (e) {
      err = e;
    }
    expect(isReleaseError(err, 'CANONICALIZE_FAILED')).toBe(true);
  });

  it('refuses a circular structure', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(() => canonicalize(a)).toThrow(/circular/);
  });

  it('accepts surrogate pairs, null-prototype objects and sorts keys by UTF-16 code units', () => {
    const o = Object.create(null) as Record<string, unknown>;
    o['\u{1F600}'] = 1;
    o['\uFB33'] = 2;
    o.b = [null, true, 1e21, -0];
    expect(new TextDecoder().decode(canonicalize(o))).toBe('{"b":[null,true,1e+21,0],"\u{1F600}":1,"\uFB33":2}');
  });

  it('isCanonical refuses whitespace, key order, duplicate keys, escapes and bad UTF-8', () => {
    expect(isCanonical(enc.encode('{"a":1,"b":2}'))).toBe(true);
    expect(isCanonical(enc.encode('{"a": 1,"b":2}'))).toBe(false);
    expect(isCanonical(enc.encode('{"b":2,"a":1}'))).toBe(false);
    expect(isCanonical(enc.encode('{"a":1,"a":1}'))).toBe(false);
    expect(isCanonical(enc.encode('{"a":"\\u0041"}'))).toBe(false);
    expect(isCanonical(enc.encode('{"a":1.0}'))).toBe(false);
    expect(isCanonical(enc.encode('{"a":"\\ud800"}'))).toBe(false);
    expect(isCanonical(enc.encode('{"a":1}\n'))).toBe(false);
    expect(isCanonical(new Uint8Array([0x22, 0xff, 0x22]))).toBe(false);
    expect(isCanonical(enc.encode('\ufeff{"a":1}'))).toBe(false);
  });
});

describe('fast canonical check agrees with the canonicalize library', () => {
  // the verifier's serializer (canonicalParsedText) must never disagree with the producer's
  const rnd = (() => {
    let s = 42;
    return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  })();
  const pieces = ['a', 'é', '\u{1F600}', '\uFB33', '"', '\\', '\n', '\u0000', '\u2028', 'Z', '€', '\u001f', '\u007f'];
  const str = () => Array.from({ length: Math.floor(rnd() * 6) }, () => pieces[Math.floor(rnd() * pieces.length)]).join('');
  const num = () => [0, -0, 1, -1, 1e21, 1e-7, 0.1, 123456789.123, 2 ** 53, -1.5e-300, 5e-324, Math.PI][Math.floor(rnd() * 12)]!;
  function gen(depth: number): unknown {
    const r = rnd();
    if (depth > 3 || r < 0.3) return [str(), num(), true, false, null][Math.floor(rnd() * 5)];
    if (r < 0.6) return Array.from({ length: Math.floor(rnd() * 4) }, () => gen(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 5) }, () => [str(), gen(depth + 1)]));
  }
  it('on 2000 random documents', () => {
    for (let i = 0; i < 2000; i++) {
      const v = JSON.parse(JSON.stringify(gen(0))) as unknown;
      const text = new TextDecoder().decode(canonicalize(v));
      expect(canonicalParsedText(v)).toBe(text);
      expect(isCanonical(enc.encode(text))).toBe(true);
    }
  });
  it('on the RFC 8785 vectors', () => {
    for (const f of files) {
      const v = JSON.parse(readFileSync(join(dir, 'input', f), 'utf8')) as unknown;
      expect(canonicalParsedText(v)).toBe(readFileSync(join(dir, 'output', f), 'utf8'));
    }
  });
  it('refuses lone surrogates that JSON.parse lets through', () => {
    expect(canonicalParsedText(JSON.parse('{"a":["\\udc00"]}'))).toBeUndefined();
    expect(canonicalParsedText(JSON.parse('{"\\ud800":1}'))).toBeUndefined();
  });
});

describe('isCanonical (the verifier fast path and its fallback)', () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  it.each([
    ['sorted keys', '{"a":1,"b":[true,null,"x"],"c":{"d":2.5}}', true],
    ['integer-like keys in JCS order (V8 enumerates them numerically)', '{"10":1,"9":2}', true],
    ['integer-like keys in numeric order', '{"9":2,"10":1}', false],
    ['unsorted keys', '{"b":1,"a":2}', false],
    ['unsorted nested keys', '{"a":{"z":1,"y":2}}', false],
    ['insignificant whitespace', '{"a": 1}', false],
    ['non-canonical number', '{"a":1.0}', false],
    ['escaped character JCS writes literally', '{"a":"\\u0041"}', false],
    ['lone surrogate in a value', '{"a":"\\udc00"}', false],
    ['lone surrogate in a key', '{"\\ud800":1}', false],
    ['surrogate pair written literally', '{"a":"\u{1F600}"}', true],
    ['control character escaped as JCS writes it', '{"a":"\\u001f"}', true],
    ['lone surrogate deep in sorted text beside another escape', '{"a":["\\n",{"b":"\\udbff"}]}', false],
    ['RFC 8785 sample', readFileSync(join(import.meta.dirname, '..', 'vectors', 'rfc8785', 'output', 'structures.json'), 'utf8'), true],
  ])('%s', (_name, text, expected) => {
    expect(isCanonical(enc(text))).toBe(expected);
  });
  it('a surrogate encoded in UTF-8 bytes (no escape) is refused by the strict decoder', () => {
    // "\ud800" as the three bytes ED A0 80: text without a `\u` escape cannot carry a lone surrogate
    expect(isCanonical(new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]))).toBe(false);
  });
});
