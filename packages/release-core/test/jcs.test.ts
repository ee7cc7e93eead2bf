import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalize, isCanonical, isReleaseError } from '../src/index.js';

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
