import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { filterError } from './errors.js';
import { tokenize, type Operator, type Token } from './lexer.js';
import { SERVER_LIMITS } from '../../../limits.js';

/** A device column a filter may name (docs/device-filter.md "Fields"). */
export const FILTER_COLUMNS = ['name', 'status', 'profile', 'agent_version'] as const;
export type FilterColumn = (typeof FILTER_COLUMNS)[number];

export type Field = { kind: 'column'; name: FilterColumn } | { kind: 'tags' } | { kind: 'attribute'; namespace: 'attributes' | 'custom'; key: string };

/** A parsed filter: comparisons joined by and/or/not. */
export type FilterNode =
  | { kind: 'and' | 'or'; left: FilterNode; right: FilterNode }
  | { kind: 'not'; operand: FilterNode }
  | { kind: 'compare'; field: Field; op: Operator; value: string; column: number };

const ORDERED: readonly Operator[] = ['<', '<=', '>', '>='];

/**
 * A recursive-descent parser of the grammar in docs/device-filter.md:
 *
 *   filter     = or-expr end
 *   or-expr    = and-expr { "or" and-expr }
 *   and-expr   = unary { "and" unary }
 *   unary      = "not" unary | "(" or-expr ")" | comparison
 *   comparison = field operator value
 *
 * Bounded: the input's length (lexer), the comparisons (`filterTerms`) and the nesting of
 * parentheses and `not` (`filterDepth`), so a hostile filter costs at most a bounded walk and
 * the recursion can never exhaust the stack. Every refusal names the column it starts at.
 */
export function parseFilter(input: string): FilterNode {
  return new Parser(tokenize(input)).parse();
}

class Parser {
  private pos = 0;
  private terms = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): FilterNode {
    if (this.peek().kind === 'end') throw filterError(1, 'empty: expected a comparison such as tags has "eu"');
    const node = this.orExpr(0);
    const t = this.peek();
    if (t.kind !== 'end') throw filterError(t.column, `unexpected ${show(t)}: expected "and", "or" or the end`);
    return node;
  }

  private peek(): Token {
    return this.tokens[this.pos]!;
  }

  private next(): Token {
    return this.tokens[this.pos++]!;
  }

  private orExpr(depth: number): FilterNode {
    let left = this.andExpr(depth);
    while (this.peek().kind === 'keyword' && this.peek().text === 'or') {
      this.next();
      left = { kind: 'or', left, right: this.andExpr(depth) };
    }
    return left;
  }

  private andExpr(depth: number): FilterNode {
    let left = this.unary(depth);
    while (this.peek().kind === 'keyword' && this.peek().text === 'and') {
      this.next();
      left = { kind: 'and', left, right: this.unary(depth) };
    }
    return left;
  }

  private unary(depth: number): FilterNode {
    const t = this.peek();
    if ((t.kind === 'keyword' && t.text === 'not') || (t.kind === 'paren' && t.text === '(')) {
      if (depth + 1 > SERVER_LIMITS.devices.filterDepth) throw filterError(t.column, `nested deeper than ${SERVER_LIMITS.devices.filterDepth} levels`);
      this.next();
      if (t.kind === 'keyword') return { kind: 'not', operand: this.unary(depth + 1) };
      const inner = this.orExpr(depth + 1);
      const close = this.next();
      if (close.kind !== 'paren' || close.text !== ')')
        throw filterError(close.column, `expected ")" to close the "(" at column ${t.column}, found ${show(close)}`);
      return inner;
    }
    return this.comparison();
  }

  private comparison(): FilterNode {
    const f = this.next();
    if (f.kind !== 'ident')
      throw filterError(f.column, `expected a field (name, status, profile, agent_version, tags, attributes.<key>, custom.<key>), found ${show(f)}`);
    this.terms += 1;
    if (this.terms > SERVER_LIMITS.devices.filterTerms) throw filterError(f.column, `more than ${SERVER_LIMITS.devices.filterTerms} comparisons`);
    const field = readField(f.text, f.column);
    const o = this.next();
    if (o.kind !== 'op') throw filterError(o.column, `expected an operator (=, !=, <, <=, >, >=, ~, has) after ${f.text}, found ${show(o)}`);
    const v = this.next();
    if (v.kind !== 'string' && v.kind !== 'number') throw filterError(v.column, `expected a value ("text" or a number) after ${o.text}, found ${show(v)}`);
    if (field.kind === 'tags' && o.text !== 'has') throw filterError(o.column, 'tags take only "has" (tags has "eu"; not tags has "eu")');
    if (field.kind !== 'tags' && o.text === 'has') throw filterError(o.column, `"has" applies to tags only; ${f.text} takes =, !=, <, <=, >, >=, ~`);
    if (field.kind === 'column' && field.name === 'status' && (ORDERED.includes(o.text) || o.text === '~')) {
      throw filterError(o.column, 'status takes = or != (online, offline, decommissioned)');
    }
    if (field.kind === 'tags' && !IDENTIFIER_PATTERNS.deviceTag.test(v.text)) {
      throw filterError(v.column, `a tag matches ${IDENTIFIER_PATTERNS.deviceTag.source}`);
    }
    return { kind: 'compare', field, op: o.text, value: v.text, column: f.column };
  }
}

function readField(text: string, column: number): Field {
  if ((FILTER_COLUMNS as readonly string[]).includes(text)) return { kind: 'column', name: text as FilterColumn };
  if (text === 'tags') return { kind: 'tags' };
  const dot = text.indexOf('.');
  const namespace = dot < 0 ? '' : text.slice(0, dot);
  if (namespace === 'attributes' || namespace === 'custom') {
    const key = text.slice(dot + 1);
    if (!IDENTIFIER_PATTERNS.inventoryKey.test(key))
      throw filterError(column + dot + 1, `an attribute name matches ${IDENTIFIER_PATTERNS.inventoryKey.source}`);
    return { kind: 'attribute', namespace, key };
  }
  throw filterError(column, `unknown field ${JSON.stringify(text.slice(0, 64))} (name, status, profile, agent_version, tags, attributes.<key>, custom.<key>)`);
}

function show(t: Token): string {
  if (t.kind === 'end') return 'the end';
  if (t.kind === 'string') return 'a string';
  return JSON.stringify(t.text.slice(0, 64));
}
