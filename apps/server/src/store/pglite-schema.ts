import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';
import { PREPARE_MARK, preparedStatementName } from './prepared.js';

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

const decoder = new TextDecoder();

function cstringEnd(buf: Uint8Array, at: number): number {
  let end = at;
  while (buf[end] !== 0) end++;
  return end;
}

/**
 * Reads the rows of one statement's response straight from the wire bytes: RowDescription,
 * DataRows and CommandComplete, each field text decoded once and converted by the instance's
 * parsers. PGlite's own path copies the response four times and builds an object per
 * message; at 1,500 list pages a second those copies were most of the embedded server's
 * garbage (a full mark-compact every quarter second, the bulk of its p99). An ErrorResponse
 * is handed to PGlite's protocol parser, so errors are the same DatabaseError as elsewhere.
 */
function readResponse(pg: PGlite, buf: Uint8Array): Results {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const fields: { name: string; dataTypeID: number }[] = [];
  const rows: Record<string, unknown>[] = [];
  let affectedRows = 0;
  for (let at = 0; at + 5 <= buf.byteLength;) {
    const type = buf[at]!;
    const length = view.getInt32(at + 1);
    const body = at + 5;
    const next = at + 1 + length;
    if (type === 0x45 /* E */) {
      let error: unknown;
      new protocol.Parser().parse(buf.slice(at, next), (m) => (error = m));
      throw error;
    } else if (type === 0x41 /* A: NotificationResponse */) {
      // Statements run here are read-only (bindSearchPath): a notification cannot arrive in
      // their response. Refuse loudly rather than lose one (caches depend on them).
      throw new Error('pglite prepared path: unexpected notification in a read-only statement response');
    } else if (type === 0x54 /* T */) {
      const n = view.getInt16(body);
      let p = body + 2;
      for (let i = 0; i < n; i++) {
        const end = cstringEnd(buf, p);
        fields.push({ name: decoder.decode(buf.subarray(p, end)), dataTypeID: view.getInt32(end + 7) });
        p = end + 19;
      }
    } else if (type === 0x44 /* D */) {
      const n = view.getInt16(body);
      const row: Record<string, unknown> = {};
      let p = body + 2;
      for (let i = 0; i < n; i++) {
        const len = view.getInt32(p);
        p += 4;
        const field = fields[i]!;
        if (len === -1) row[field.name] = null;
        else {
          const text = decoder.decode(buf.subarray(p, p + len));
          const parser = pg.parsers[field.dataTypeID];
          row[field.name] = parser ? parser(text, field.dataTypeID) : text;
          p += len;
        }
      }
      rows.push(row);
    } else if (type === 0x43 /* C */) {
      const tag = decoder.decode(buf.subarray(body, cstringEnd(buf, body))).split(' ');
      if (['INSERT', 'UPDATE', 'DELETE', 'MERGE', 'COPY'].includes(tag[0]!)) affectedRows += Number(tag[tag.length - 1]);
    }
    at = next;
  }
  return { rows, fields, affectedRows };
}

/** Collects a response's chunks (views into PGlite's memory, valid only during the call). */
async function execRaw(pg: PGlite, message: Uint8Array): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  await pg.execProtocolRawStream(message, {
    onRawData: (chunk: Uint8Array) => {
      chunks.push(chunk.slice());
    },
  });
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** A cached plan invalidated by DDL that changed its result type (PostgreSQL 0A000). */
const isStalePlan = (error: unknown) => (error as { code?: string }).code === '0A000' && /cached plan/.test(String((error as Error).message));

async function runPrepared(pg: PGlite, state: Shared, searchPath: string, text: string, params: readonly unknown[]): Promise<Results> {
  const { serialize } = protocol;
  // A prepared statement binds the tables of the schema it was parsed in: the path is part of the name.
  const name = preparedStatementName(`${searchPath}\0${text}`);
  // PGlite's transaction lock first, then its query lock, as its own query() and
  // describeQuery() take them: runExclusive() alone is only the query lock, which is free
  // between the statements of an open transaction, so a read taking only that lock would run
  // inside whatever transaction is open on the instance (and see its uncommitted rows).
  return pg._runExclusiveTransaction(() =>
    pg.runExclusive(async () => {
      for (let attempt = 0; ; attempt++) {
        let types = state.statements.get(name);
        if (types === undefined) {
          const described = await pg.execProtocol(
            Buffer.concat([serialize.parse({ name, text, types: [] }), serialize.describe({ type: 'S', name }), serialize.sync()]),
          );
          types = parse.parseDescribeStatementResults(described.messages);
          state.statements.set(name, types);
        }
        const values = params.map((v, i) => {
          if (v === null || v === undefined) return null;
          const serializer = pg.serializers[types[i]!];
          return serializer ? serializer(v) : v instanceof Date ? v.toISOString() : String(v);
        });
        try {
          const response = await execRaw(
            pg,
            Buffer.concat([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
          );
          return readResponse(pg, response);
        } catch (error) {
          if (attempt > 0 || !isStalePlan(error)) throw error;
          state.statements.delete(name);
          await pg.execProtocol(Buffer.concat([serialize.close({ type: 'S', name }), serialize.sync()]));
        }
      }
    }),
  );
}

/** Marked read-only statements take the prepared path; anything else goes through PGlite's query(). */
const READ_ONLY = /^\s*(SELECT|WITH)\b/i;

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
        query.startsWith(PREPARE_MARK) &&
        READ_ONLY.test(query.slice(PREPARE_MARK.length)) &&
        (options === undefined || (options as { rowMode?: string }).rowMode !== 'array')
          ? runPrepared(pg, state, searchPath, query, params ?? [])
          : pg.query(query, params as never, options as never),
      )) as PGlite['query'],
    transaction: ((callback: Parameters<PGlite['transaction']>[0]) => exclusive(() => pg.transaction(callback))) as PGlite['transaction'],
  };
}
