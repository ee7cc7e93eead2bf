import type { PGlite } from '@electric-sql/pglite';

/**
 * PGlite is ONE session, so `search_path` is shared by everything using the instance. When
 * several stores (schemas) share one instance (tests: one PGlite per file, one schema per
 * store), each query must run with its own store's path. This wrapper serializes the
 * instance's users and re-issues `SET search_path` whenever the path changes hands; a
 * transaction holds the instance for its whole duration, so nothing can switch the path
 * under it. The SET is issued outside transactions, so a rollback cannot undo it.
 */
interface Shared {
  path: string | undefined;
  tail: Promise<unknown>;
}

const sharedState = new WeakMap<PGlite, Shared>();

function stateOf(pg: PGlite): Shared {
  let s = sharedState.get(pg);
  if (!s) {
    s = { path: undefined, tail: Promise.resolve() };
    sharedState.set(pg, s);
  }
  return s;
}

/** The subset of PGlite kysely's PGliteDialect uses. */
export interface SchemaBoundPglite {
  readonly closed: boolean;
  readonly ready: boolean;
  readonly waitReady: Promise<void>;
  close(): Promise<void>;
  query: PGlite['query'];
  transaction: PGlite['transaction'];
}

export function bindSearchPath(pg: PGlite, searchPath: string): SchemaBoundPglite {
  const state = stateOf(pg);
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = state.tail.then(async () => {
      if (state.path !== searchPath) {
        await pg.query(`SET search_path TO ${searchPath}`);
        state.path = searchPath;
      }
      return fn();
    });
    state.tail = run.catch(() => undefined);
    return run;
  };
  return {
    get closed() {
      return pg.closed;
    },
    get ready() {
      return pg.ready;
    },
    waitReady: pg.waitReady,
    close: () => pg.close(),
    query: ((query: string, params?: unknown[], options?: unknown) => exclusive(() => pg.query(query, params as never, options as never))) as PGlite['query'],
    transaction: ((callback: Parameters<PGlite['transaction']>[0]) => exclusive(() => pg.transaction(callback))) as PGlite['transaction'],
  };
}
