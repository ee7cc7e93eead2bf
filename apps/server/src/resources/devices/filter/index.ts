import type { RawBuilder } from 'kysely';
import { compileFilter } from './compile.js';
import { parseFilter } from './parser.js';

export { parseFilter, type FilterNode } from './parser.js';
export { compileFilter } from './compile.js';

/** `filter` text to its WHERE condition; refuses (400 naming `filter` and a column) what the grammar does not admit. */
export function deviceFilterSql(text: string): RawBuilder<unknown> {
  return compileFilter(parseFilter(text));
}
