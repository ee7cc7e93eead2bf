import canonicalizeJson from 'canonicalize';
import { ReleaseError } from '../errors.js';
import { fromUtf8, utf8 } from './bytes.js';

/**
 * RFC 8785 (JCS) canonical JSON. The `canonicalize` library serializes; this module makes it
 * strict first, because the library silently drops `undefined` members, turns `undefined`
 * array items into null and calls `toJSON()` (a Date would become a string): a signer must
 * never sign bytes that differ from the value it was given.
 */

// With the `u` flag a surrogate pair is one code point, so this matches lone surrogates only.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function fail(path: string, why: string): never {
  throw new ReleaseError('CANONICALIZE_FAILED', `cannot canonicalize ${path || '(root)'}: ${why}`);
}

function assertJsonValue(value: unknown, path: string, seen: Set<object>): void {
  switch (typeof value) {
    case 'string':
      if (LONE_SURROGATE.test(value)) fail(path, 'string contains a lone surrogate');
      return;
    case 'number':
      if (!Number.isFinite(value)) fail(path, `number ${String(value)} is not finite`);
      return;
    case 'boolean':
      return;
    case 'object': {
      if (value === null) return;
      if (seen.has(value)) fail(path, 'circular reference');
      seen.add(value);
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) fail(`${path}[${i}]`, 'sparse array hole');
          assertJsonValue(value[i], `${path}[${i}]`, seen);
        }
      } else {
        const proto = Object.getPrototypeOf(value) as unknown;
        if (proto !== Object.prototype && proto !== null) fail(path, 'not a plain object');
        if (Object.getOwnPropertySymbols(value).length > 0) fail(path, 'symbol-keyed property');
        for (const [k, v] of Object.entries(value)) {
          if (LONE_SURROGATE.test(k)) fail(path, `key ${JSON.stringify(k)} contains a lone surrogate`);
          assertJsonValue(v, path ? `${path}.${k}` : k, seen);
        }
      }
      seen.delete(value);
      return;
    }
    default:
      fail(path, `${typeof value} is not a JSON value`);
  }
}

/** JCS text of a JSON value; throws CANONICALIZE_FAILED on anything that is not plain JSON. */
export function canonicalizeText(value: unknown): string {
  assertJsonValue(value, '', new Set());
  const text = canonicalizeJson(value);
  if (text === undefined) fail('', 'not serializable');
  return text;
}

/** RFC 8785 UTF-8 bytes of `value` (strict, see module comment). */
export function canonicalize(value: unknown): Uint8Array {
  return utf8(canonicalizeText(value));
}

/**
 * JCS text of a value that came out of JSON.parse (so: only plain objects, arrays, strings,
 * finite numbers, booleans, null). Written for the verify hot path, where the generic strict
 * walk plus the library cost several times the signature check. For JSON.parse output the
 * rules reduce to: keys sorted by UTF-16 code units (the default sort), strings and numbers
 * exactly as JSON.stringify writes them (RFC 8785 3.2.2.2 and 3.2.2.3 are defined that way),
 * and no lone surrogates (returns undefined). test/jcs.test.ts checks it against the library.
 */
export function canonicalParsedText(value: unknown): string | undefined {
  if (typeof value === 'string') return LONE_SURROGATE.test(value) ? undefined : JSON.stringify(value);
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  let out: string;
  if (Array.isArray(value)) {
    out = '[';
    for (let i = 0; i < value.length; i++) {
      const t = canonicalParsedText(value[i]);
      if (t === undefined) return undefined;
      out += i === 0 ? t : `,${t}`;
    }
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const kt = canonicalParsedText(k);
    const vt = canonicalParsedText(obj[k]);
    if (kt === undefined || vt === undefined) return undefined;
    out += i === 0 ? `${kt}:${vt}` : `,${kt}:${vt}`;
  }
  return `${out}}`;
}

/**
 * Parse JSON bytes and report whether they are already canonical. Returns the parsed value
 * when they are, so a verifier parses once (contracts §1: payload bytes MUST equal
 * JCS(parse(bytes))). Invalid UTF-8, invalid JSON and lone surrogates are "not canonical".
 */
export function parseCanonical(bytes: Uint8Array): { ok: true; value: unknown } | { ok: false; reason: string } {
  let text: string;
  try {
    text = fromUtf8(bytes);
  } catch {
    return { ok: false, reason: 'payload is not valid UTF-8' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'payload is not valid JSON' };
  }
  // Fast path: when every object's keys already come in JCS order and no string holds a lone
  // surrogate, the JCS text of the value is exactly JSON.stringify's (native) output. Anything
  // else (e.g. integer-like keys, which V8 enumerates numerically) takes the general serializer.
  // The strict UTF-8 decoder refuses encoded surrogates, so a parsed string can hold a lone one
  // only through a `\u` escape: text without one skips the per-string surrogate scan.
  const surrogatesPossible = text.includes('\\u');
  const fast = (surrogatesPossible ? sortedAndWellFormed(value) : sortedKeys(value)) ? JSON.stringify(value) : canonicalParsedText(value);
  if (fast === undefined) return { ok: false, reason: 'payload contains a lone surrogate' };
  if (fast !== text) return { ok: false, reason: 'payload bytes are not RFC 8785 canonical JSON' };
  return { ok: true, value };
}

/** Keys of every object in UTF-16 order (JCS 3.2.3) and no lone surrogate anywhere. */
function sortedAndWellFormed(value: unknown): boolean {
  if (typeof value === 'string') return !LONE_SURROGATE.test(value);
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!sortedAndWellFormed(value[i])) return false;
    return true;
  }
  let prev: string | undefined;
  for (const k in value) {
    if ((prev !== undefined && !(prev < k)) || LONE_SURROGATE.test(k)) return false;
    if (!sortedAndWellFormed((value as Record<string, unknown>)[k])) return false;
    prev = k;
  }
  return true;
}

/** Keys of every object in UTF-16 order (JCS 3.2.3); for values parsed from text without `\u` escapes. */
function sortedKeys(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!sortedKeys(value[i])) return false;
    return true;
  }
  let prev: string | undefined;
  for (const k in value) {
    if (prev !== undefined && !(prev < k)) return false;
    if (!sortedKeys((value as Record<string, unknown>)[k])) return false;
    prev = k;
  }
  return true;
}

/** bytes === JCS(parse(bytes)) */
export function isCanonical(bytes: Uint8Array): boolean {
  return parseCanonical(bytes).ok;
}
