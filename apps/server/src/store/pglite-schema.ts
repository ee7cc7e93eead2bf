import { createHash } from 'node:crypto';
import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';
import { PREPARE_MARK } from './prepared.js';

/**
 * PGlite is ONE session, so `search_path` is shared by everything using the instance. When
 * several stores (schemas) share one instance (tests: one PGlite per file, one schema per
 * store), each query must run with its own store's path. This wrapper serializes the
 * instance's users and re-issues `SET search_path` whenever the path changes hands; a
 * transaction holds the instance for its whole duration, so nothing can switch the path
 * under it. The SET is issued outside transactions, so a rollback cannot undo it.
 *
 * Two more things happen here because every embedded query passes through:
 *
 * - Fairness. Each query first yields to the event loop (setImmediate). Without it, queued
 *   queries ran back to back in one chain of promise callbacks while no socket was read or
 *   written: the event loop stalled 100+ ms under 50 concurrent list requests and the p99
 *   reached 0.6-1.4 s against a median of 40 ms. With it, requests are served in arrival
 *   order and the p99 fell to about 130 ms at the same throughput.
 * - Prepared statements. A text marked with PREPARE_MARK (store/prepared.ts) is parsed once
 *   per session under a name derived from the search path and the text (a prepared
 *   statement binds the tables of the schema it was parsed in), then run with Bind/Execute
 *   through PGlite's protocol API. PGlite's `query()` parses, describes and plans on every
 *   call: the device list took 685 us through `query()` and 197 us as a named statement.
 */
interface Shared {
  path: string | undefined;
  tail: Promise<unknown>;
  /** Parsed statement name -> parameter type OIDs. */
  statements: Map<string, number[]>;
}

const sharedState = new WeakMap<PGlite, Shared>();

function stateOf(pg: PGlite): Shared {
  let s = sharedState.get(pg);
  if (!s) {
    s = { path: undefined, tail: Promise.resolve(), statements: new Map() };
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

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** A cached plan invalidated by DDL that changed its result type (PostgreSQL 0A000). */
const isStalePlan = (error: unknown) => (error as { code?: string }).code === '0A000' && /cached plan/.test(String((error as Error).message));

async function runPrepared(pg: PGlite, state: Shared, searchPath: string, text: string, params: readonly unknown[]): Promise<Results> {
  const { serialize } = protocol;
  const name = `svc_${createHash('sha256').update(searchPath).update('\0').update(text).digest('hex').slice(0, 32)}`;
  return pg.runExclusive(async () => {
    for (let attempt = 0; ; attempt++) {
      let types = state.statements.get(name);
      if (types === undefined) {
        const described = await pg.execProtocol(concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]));
        types = parse.parseDescribeStatementResults(described.messages);
        state.statements.set(name, types);
      }
      const values = params.map((v, i) => {
        if (v === null || v === undefined) return null;
        const serializer = pg.serializers[types[i]!];
        return serializer ? serializer(v) : v instanceof Date ? v.toISOString() : String(v);
      });
      try {
        const result = await pg.execProtocol(concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]));
        const results = parse.parseResults(result.messages, pg.parsers, { rowMode: 'object' });
        return results[results.length - 1]!;
      } catch (error) {
        if (attempt > 0 || !isStalePlan(error)) throw error;
        state.statements.delete(name);
        await pg.execProtocol(concat([serialize.close({ type: 'S', name }), serialize.sync()]));
      }
    }
  });
}

export function bindSearchPath(pg: PGlite, searchPath: string): SchemaBoundPglite {
  const state = stateOf(pg);
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = state.tail.then(yieldToEventLoop).then(async () => {
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
    query: ((query: string, params?: unknown[], options?: unknown) =>
      exclusive((): Promise<Results> =>
        query.startsWith(PREPARE_MARK) && (options === undefined || (options as { rowMode?: string }).rowMode !== 'array')
          ? runPrepared(pg, state, searchPath, query, params ?? [])
          : pg.query(query, params as never, options as never),
      )) as PGlite['query'],
    transaction: ((callback: Parameters<PGlite['transaction']>[0]) => exclusive(() => pg.transaction(callback))) as PGlite['transaction'],
  };
}
