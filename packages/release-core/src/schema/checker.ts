import { DIGEST_PATTERN, type Digest } from '../digest.js';
import type { Issue } from '../errors.js';

/**
 * A tiny validator that collects every bad field instead of stopping at the first one, so an
 * operator fixing a payload sees all problems at once. Each check returns the narrowed value
 * or undefined (and records an issue at `path`).
 */
export class Checker {
  readonly issues: Issue[] = [];

  add(path: string, message: string): void {
    this.issues.push({ path: path || '(root)', message });
  }

  /** An object with exactly the allowed keys; missing required keys and unknown keys are issues. */
  object(value: unknown, path: string, required: readonly string[], optional: readonly string[] = []): Record<string, unknown> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.add(path, `expected an object, got ${describe(value)}`);
      return undefined;
    }
    const obj = value as Record<string, unknown>;
    for (const k of Object.keys(obj)) if (!required.includes(k) && !optional.includes(k)) this.add(join(path, k), 'unknown field');
    for (const k of required) if (!Object.hasOwn(obj, k)) this.add(join(path, k), 'required field is missing');
    return obj;
  }

  /** An object used as a map (any keys, at most `max` of them). */
  record(value: unknown, path: string, max: number): Record<string, unknown> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.add(path, `expected an object, got ${describe(value)}`);
      return undefined;
    }
    const n = Object.keys(value).length;
    if (n > max) {
      this.add(path, `has ${n} entries, at most ${max} allowed`);
      return undefined;
    }
    return value as Record<string, unknown>;
  }

  array(value: unknown, path: string, min: number, max: number): unknown[] | undefined {
    if (!Array.isArray(value)) {
      this.add(path, `expected an array, got ${describe(value)}`);
      return undefined;
    }
    if (value.length < min) this.add(path, min === 1 ? 'must not be empty' : `must have at least ${min} items`);
    if (value.length > max) {
      this.add(path, `has ${value.length} items, at most ${max} allowed`);
      return undefined; // do not walk an oversized array item by item
    }
    return value as unknown[];
  }

  string(value: unknown, path: string, opts: { pattern?: RegExp; max?: number; min?: number; what?: string } = {}): string | undefined {
    if (typeof value !== 'string') {
      this.add(path, `expected a string, got ${describe(value)}`);
      return undefined;
    }
    const max = opts.max ?? 256;
    if (value.length > max) {
      this.add(path, `is ${value.length} characters, at most ${max} allowed`);
      return undefined;
    }
    if (value.length < (opts.min ?? 1)) {
      this.add(path, 'must not be empty');
      return undefined;
    }
    if (opts.pattern && !opts.pattern.test(value)) {
      this.add(path, `${JSON.stringify(value)} is not a valid ${opts.what ?? 'value'} (${opts.pattern.source})`);
      return undefined;
    }
    return value;
  }

  oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T | undefined {
    if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
      this.add(path, `${describe(value)} is not one of ${allowed.map((a) => JSON.stringify(a)).join(', ')}`);
      return undefined;
    }
    return value as T;
  }

  integer(value: unknown, path: string, min: number, max: number = Number.MAX_SAFE_INTEGER): number | undefined {
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
      this.add(path, `expected an integer, got ${describe(value)}`);
      return undefined;
    }
    if (value < min || value > max) {
      this.add(path, `${value} is out of range ${min}..${max}`);
      return undefined;
    }
    return value;
  }

  boolean(value: unknown, path: string): boolean | undefined {
    if (typeof value !== 'boolean') {
      this.add(path, `expected true or false, got ${describe(value)}`);
      return undefined;
    }
    return value;
  }

  digest(value: unknown, path: string): Digest | undefined {
    return this.string(value, path, { pattern: DIGEST_PATTERN, max: 71, what: 'digest (sha256:<64 lowercase hex>)' }) as Digest | undefined;
  }

  /** RFC 3339 UTC timestamp ending in `Z` (contracts preamble). */
  timestamp(value: unknown, path: string): Date | undefined {
    const s = this.string(value, path, { pattern: TIMESTAMP, max: 40, what: 'RFC 3339 UTC timestamp (YYYY-MM-DDTHH:MM:SSZ)' });
    if (s === undefined) return undefined;
    const d = parseTimestamp(s);
    if (!d) this.add(path, `${JSON.stringify(s)} is not a real date and time`);
    return d;
  }
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Parse an RFC 3339 `Z` timestamp, refusing impossible dates (Feb 30, hour 24). */
export function parseTimestamp(s: string): Date | undefined {
  if (!TIMESTAMP.test(s)) return undefined;
  const [y, mo, d, h, mi, se] = [s.slice(0, 4), s.slice(5, 7), s.slice(8, 10), s.slice(11, 13), s.slice(14, 16), s.slice(17, 19)].map<number>(Number);
  const date = new Date(s);
  if (Number.isNaN(date.getTime())) return undefined;
  if (date.getUTCFullYear() !== y || date.getUTCMonth() + 1 !== mo || date.getUTCDate() !== d) return undefined;
  if (date.getUTCHours() !== h || date.getUTCMinutes() !== mi || date.getUTCSeconds() !== se) return undefined;
  return date;
}

export function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'object') return 'an object';
  if (value === undefined) return 'nothing';
  return `${typeof value} ${String(value)}`;
}
