import { ReleaseError } from '../errors.js';

/**
 * OLPC canonical JSON (http://wiki.laptop.org/go/Canonical_JSON), the encoding TUF metadata is
 * signed and key ids are hashed over (securesystemslib `encode_canonical`). It is not RFC 8785:
 * strings escape only `"` and `\` (every other character, control characters included, is
 * written as it is), object members are sorted by code point, there is no whitespace, and
 * numbers are integers only. Values are strings, safe integers, booleans, null, arrays and
 * plain objects; anything else is CANONICALIZE_FAILED naming the path.
 */

// With the `u` flag a surrogate pair is one code point, so this matches lone surrogates only.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function fail(path: string, why: string): never {
  throw new ReleaseError('CANONICALIZE_FAILED', `cannot canonicalize ${path || '(root)'} as OLPC canonical JSON: ${why}`);
}

function olpcString(s: string, path: string): string {
  if (LONE_SURROGATE.test(s)) fail(path, 'string contains a lone surrogate');
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Code point order (what Python's sorted() gives for str), not UTF-16 code unit order. */
function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function encode(value: unknown, path: string, seen: Set<object>): string {
  switch (typeof value) {
    case 'string':
      return olpcString(value, path);
    case 'number':
      if (!Number.isSafeInteger(value)) fail(path, `number ${String(value)} is not a safe integer`);
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (seen.has(value)) fail(path, 'circular reference');
      seen.add(value);
      let out: string;
      if (Array.isArray(value)) {
        const items: string[] = [];
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) fail(`${path}[${i}]`, 'sparse array hole');
          items.push(encode(value[i], `${path}[${i}]`, seen));
        }
        out = `[${items.join(',')}]`;
      } else {
        const proto = Object.getPrototypeOf(value) as unknown;
        if (proto !== Object.prototype && proto !== null) fail(path, 'not a plain object');
        if (Object.getOwnPropertySymbols(value).length > 0) fail(path, 'symbol-keyed property');
        const keys = Object.keys(value).sort(byCodePoint);
        const members = keys.map((k) => {
          const at = path ? `${path}.${k}` : k;
          return `${olpcString(k, at)}:${encode((value as Record<string, unknown>)[k], at, seen)}`;
        });
        out = `{${members.join(',')}}`;
      }
      seen.delete(value);
      return out;
    }
    default:
      return fail(path, `${typeof value} is not a JSON value`);
  }
}

/** OLPC canonical JSON text of `value` (encode it as UTF-8 to hash or sign it). */
export function olpcCanonicalText(value: unknown): string {
  return encode(value, '', new Set());
}
