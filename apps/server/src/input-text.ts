import { Stream } from 'node:stream';
/**
 * The one rule for every string a caller hands the server, on both transports: path and
 * query values, JSON string fields and object keys, multipart text fields and file names,
 * every string and key of a document the server parses itself (SBOM, VEX, OSV record, KEV
 * catalog: `parseJsonDocument`), and every string of a device-channel message. A string
 * must be well-formed Unicode (no lone surrogate) and contain no control character other
 * than TAB, LF and CR.
 *
 * Why: PostgreSQL stores neither U+0000 in `text` nor a lone surrogate or `\u0000` in
 * `jsonb` (the driver would answer an error for the caller's bytes, or silently write
 * U+FFFD); ESC, CSI and the other controls in a name reach operators' terminals through the
 * CLI and the logs. Refused with 400 / INVALID_ARGUMENT naming the field (docs/errors.md);
 * a document answers with its own code (SBOM_INVALID, VEX_INVALID, FEED_INVALID).
 */
import { ServerError } from './errors/server-error.js';
import { SERVER_LIMITS } from './limits.js';

// C0 controls except TAB (09), LF (0A), CR (0D); DEL (7F) and the C1 controls (80-9F);
// a high surrogate not followed by a low one, a low surrogate not preceded by a high one.
// eslint-disable-next-line no-control-regex -- the control characters are what the rule refuses
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What is wrong with `s` under the rule, or undefined when it is acceptable. */
export function textProblem(s: string): string | undefined {
  const m = FORBIDDEN.exec(s);
  if (m === null) return undefined;
  const unit = m[0].charCodeAt(0);
  const at = `U+${unit.toString(16).toUpperCase().padStart(4, '0')} at index ${m.index}`;
  return unit >= 0xd800 && unit <= 0xdfff ? `must be well-formed Unicode (lone surrogate ${at})` : `must not contain control characters (${at})`;
}

/** Decoded fields: objects other than byte buffers and streams (a raw body a route reads itself). */
function isFieldObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !ArrayBuffer.isView(v) && !(v instanceof Stream) && typeof (v as { pipe?: unknown }).pipe !== 'function';
}

/**
 * How a field path is written: `body.members.1` for request values (as the validator names
 * them), `packages[0].name` for a document (as its JSON schema errors name them).
 */
export type PathStyle = 'request' | 'document';

function step(style: PathStyle, path: string, key: string | number): string {
  if (style === 'request') return `${path}.${key}`;
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Walks a decoded value (strings, arrays, plain objects and their keys; byte buffers are
 * data, not text, and so is a stream: a raw body a route reads itself) and names the first
 * string breaking the rule as `<path>: <problem>`, or the first array or object nested
 * deeper than `maxDepth`. Iterative: a deeply nested body cannot exhaust the stack.
 */
export function findTextProblem(value: unknown, base: string, style: PathStyle = 'request', maxDepth = Infinity): string | undefined {
  const stack: [unknown, string, number][] = [[value, base, 1]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop()!;
    const at = path || 'body';
    if (typeof v === 'string') {
      const problem = textProblem(v);
      if (problem !== undefined) return `${at}: ${problem}`;
    } else if (Array.isArray(v)) {
      if (depth > maxDepth) return `${at}: nested deeper than ${maxDepth} levels`;
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], step(style, path, i), depth + 1]);
    } else if (isFieldObject(v)) {
      if (depth > maxDepth) return `${at}: nested deeper than ${maxDepth} levels`;
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const problem = textProblem(key);
        if (problem !== undefined) return `${at}: field name ${problem}`;
        stack.push([v[key], step(style, path, key), depth + 1]);
      }
    }
  }
  return undefined;
}

/** Throws INVALID_INPUT (400 / INVALID_ARGUMENT) naming the field when `value` breaks the rule. */
export function assertText(value: unknown, field: string): void {
  const problem = findTextProblem(value, field);
  if (problem !== undefined) throw new ServerError('INVALID_INPUT', problem);
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The one reader of a JSON document the server parses itself (SBOMs, VEX, the KEV catalog,
 * each OSV record): at most `maxBytes`, strict UTF-8 JSON, an object nested at most
 * SERVER_LIMITS.documentDepth levels, and every string and key under the text rule, named by its
 * document path (`packages[0].name: ...`). `fail` makes the resource's error
 * (SBOM_INVALID, VEX_INVALID, FEED_INVALID...).
 */
export function parseJsonDocument(bytes: Uint8Array, maxBytes: number, fail: (message: string) => Error): Record<string, unknown> {
  if (bytes.length > maxBytes) throw fail(`body: larger than ${maxBytes} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(STRICT_UTF8.decode(bytes));
  } catch {
    throw fail('body: not UTF-8 JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw fail('body: must be a JSON object');
  const problem = findTextProblem(doc, '', 'document', SERVER_LIMITS.documentDepth);
  if (problem !== undefined) throw fail(problem);
  return doc as Record<string, unknown>;
}

/** What is wrong with `s` as an indexed identifier, or undefined. */
export function identifierProblem(s: string): string | undefined {
  const n = Buffer.byteLength(s, 'utf8');
  return n > SERVER_LIMITS.identifierBytes ? `longer than ${SERVER_LIMITS.identifierBytes} bytes (${n}): too long for an identifier` : undefined;
}
