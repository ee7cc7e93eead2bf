import { filterError } from './errors.js';
import { SERVER_LIMITS } from '../../../limits.js';

/** One token of a device filter (docs/device-filter.md "Tokens"); `column` is 1-based. */
export type Token =
  | { kind: 'ident'; text: string; column: number }
  | { kind: 'string'; text: string; column: number }
  | { kind: 'number'; text: string; column: number }
  | { kind: 'op'; text: Operator; column: number }
  | { kind: 'keyword'; text: Keyword; column: number }
  | { kind: 'paren'; text: '(' | ')'; column: number }
  | { kind: 'end'; text: ''; column: number };

export const OPERATORS = ['=', '!=', '<', '<=', '>', '>=', '~', 'has'] as const;
export type Operator = (typeof OPERATORS)[number];
const KEYWORDS = ['and', 'or', 'not'] as const;
export type Keyword = (typeof KEYWORDS)[number];

const IDENT_START = /[a-z_]/;
const IDENT_PART = /[A-Za-z0-9_.]/;
const DIGIT = /[0-9]/;
/** A number or bare version: digits, dots between digit runs (`3`, `2.4.0`). */
const NUMBER = /^[0-9]+(\.[0-9]+)*/;

/**
 * Splits a filter into tokens, refusing at the first character that starts none. The length
 * bound is checked before anything is read. Only printable text is accepted inside strings (no
 * control characters); outside strings, only the characters of the grammar and spaces.
 */
export function tokenize(input: string): Token[] {
  if (input.length > SERVER_LIMITS.devices.filterChars)
    throw filterError(SERVER_LIMITS.devices.filterChars + 1, `longer than ${SERVER_LIMITS.devices.filterChars} characters`);
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    const column = i + 1;
    if (c === ' ' || c === '\t') {
      i++;
    } else if (c === '(' || c === ')') {
      tokens.push({ kind: 'paren', text: c, column });
      i++;
    } else if (c === '"') {
      const { text, end } = readString(input, i);
      tokens.push({ kind: 'string', text, column });
      i = end;
    } else if (c === '=' || c === '~') {
      tokens.push({ kind: 'op', text: c, column });
      i++;
    } else if (c === '!' || c === '<' || c === '>') {
      if (input[i + 1] === '=') {
        tokens.push({ kind: 'op', text: `${c}=` as Operator, column });
        i += 2;
      } else if (c === '!') {
        throw filterError(column, 'expected "!=" ("!" alone is no operator; use "not")');
      } else {
        tokens.push({ kind: 'op', text: c as Operator, column });
        i++;
      }
    } else if (DIGIT.test(c)) {
      const m = NUMBER.exec(input.slice(i, i + 200))!;
      const after = input[i + m[0].length];
      if (after !== undefined && /[A-Za-z0-9_.+-]/.test(after)) throw filterError(i + m[0].length + 1, 'a value with letters must be quoted ("2.4.0-rc1")');
      tokens.push({ kind: 'number', text: m[0], column });
      i += m[0].length;
    } else if (IDENT_START.test(c)) {
      let j = i + 1;
      while (j < input.length && IDENT_PART.test(input[j]!)) j++;
      const word = input.slice(i, j);
      if ((KEYWORDS as readonly string[]).includes(word)) tokens.push({ kind: 'keyword', text: word as Keyword, column });
      else if (word === 'has') tokens.push({ kind: 'op', text: 'has', column });
      else tokens.push({ kind: 'ident', text: word, column });
      i = j;
    } else {
      throw filterError(column, `unexpected ${describeChar(c, input.codePointAt(i)!)}`);
    }
  }
  tokens.push({ kind: 'end', text: '', column: input.length + 1 });
  return tokens;
}

/** A double-quoted string; `\"` and `\\` are its only escapes. */
function readString(input: string, start: number): { text: string; end: number } {
  let text = '';
  let i = start + 1;
  while (i < input.length) {
    const c = input[i]!;
    if (c === '"') return { text, end: i + 1 };
    if (c === '\\') {
      const next = input[i + 1];
      if (next !== '"' && next !== '\\') throw filterError(i + 1, 'in a string, "\\" may only escape "\\"" or "\\\\"');
      text += next;
      i += 2;
      continue;
    }
    const cp = input.codePointAt(i)!;
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(c)) throw filterError(i + 1, `a string may not contain ${describeChar(c, cp)}`);
    // a lone surrogate is no character: PostgreSQL would refuse it as a parameter
    if (cp >= 0xd800 && cp <= 0xdfff) throw filterError(i + 1, 'a string may not contain a lone surrogate');
    const ch = String.fromCodePoint(cp);
    text += ch;
    i += ch.length;
  }
  throw filterError(start + 1, 'string not closed (missing ")');
}

function describeChar(c: string, cp: number): string {
  return /[\x21-\x7e]/.test(c) ? JSON.stringify(c) : `character U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}
