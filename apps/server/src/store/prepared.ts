import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Named prepared statements for the hot queries (device list, credential lookup).
 *
 * PostgreSQL parses and plans every unnamed statement again; for the device list that is
 * about as much database CPU as running it. A query whose text starts with `PREPARE_MARK`
 * is sent as a named statement instead: node-postgres parses it once per connection and
 * afterwards sends only Bind/Execute. The name is derived from the text, so two texts can
 * never share one name, and the set of marked texts is fixed by the code (a few per query
 * shape), which bounds what each connection keeps. Unmarked queries are untouched, and on
 * PGlite the mark is only a comment.
 */
export const PREPARE_MARK = '/*svc:prepare*/';

const names = new Map<string, string>();

/**
 * The statement name for `key` (the text; on PGlite the search path and the text): derived
 * from a hash, so two keys never share a name. Memoized; the memo is bounded because test
 * runs parse the same texts under many schemas.
 */
export function preparedStatementName(key: string): string {
  let name = names.get(key);
  if (name === undefined) {
    name = `svc_${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
    if (names.size >= 4096) names.clear();
    names.set(key, name);
  }
  return name;
}

type QueryFn = (...args: unknown[]) => unknown;

/** Patches each new pool client so marked texts run as named prepared statements. */
export function preparePooledStatements(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as QueryFn;
    (client as unknown as { query: QueryFn }).query = (...args: unknown[]) => {
      const [text, values] = args;
      if (typeof text === 'string' && text.startsWith(PREPARE_MARK) && args.length <= 2) {
        return query({ name: preparedStatementName(text), text, values });
      }
      return query(...args);
    };
  });
}
