import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/**
 * Change notifications from the database (LISTEN/NOTIFY), for in-process caches that must
 * forget what another server process changed. A cache may trust itself only while
 * `live` is true: the listener is connected and LISTENing, and it has recently proved that no
 * notification was missed. Whenever it (re)connects, `onChange` runs once, because changes
 * made while it was down were not heard.
 */
export interface ChangeListener {
  readonly live: boolean;
  close(): Promise<void>;
}

/** Called when a notification about the listener's schema arrives (the payload is the schema). */
export type OnChange = () => void;

export interface ListenTiming {
  /** Wait before reconnecting a dropped listener. */
  retryMs?: number;
  /** Period of the fence query that proves the connection still delivers. */
  fenceMs?: number;
  /** The listener is live only while its last completed fence started less than this ago. */
  trustMs?: number;
}

/**
 * PostgreSQL: one dedicated connection (not from the pool: a pooled client cannot keep
 * LISTENing) that reconnects after a second whenever it drops; not live in between.
 * NOTIFY is database-wide, so the payload names the schema and other schemas' (other
 * deployments', other test suites') notifications are ignored.
 *
 * A connection can also die silently (a peer gone without a FIN): every `fenceMs` (2 s) the
 * listener runs `SELECT 1` on it. PostgreSQL sends a session the notifications committed before
 * its statement ahead of the statement's ReadyForQuery, so a fence that completes proves every
 * change committed before it started was heard. The listener is live only while its last
 * completed fence started less than `trustMs` (10 s) ago: a cache that trusts a live listener
 * never answers more than 10 s behind the database, whatever the age of its entries. A fence
 * that fails, or takes longer than `trustMs`, drops the connection (reconnect, then `onChange`).
 */
export async function listenPostgres(
  connectionString: string,
  channel: string,
  schema: string,
  onChange: OnChange,
  timing: ListenTiming = {},
): Promise<ChangeListener> {
  const retryMs = timing.retryMs ?? 1000;
  const fenceMs = timing.fenceMs ?? 2000;
  const trustMs = timing.trustMs ?? 10_000;
  let client: pg.Client | undefined;
  let connected = false;
  let confirmedAt = -Infinity;
  let fencing = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const down = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    connected = false;
    c.end().catch(() => undefined);
    if (!closed) {
      timer = setTimeout(() => void connect(), retryMs);
      timer.unref(); // a retry never keeps the process alive
    }
  };
  const connect = async () => {
    timer = undefined;
    const c = new pg.Client({ connectionString, keepAlive: true, application_name: `svc-listener:${schema}`.slice(0, 63) });
    client = c;
    c.on('error', () => down(c));
    c.on('end', () => down(c));
    c.on('notification', (m) => {
      if (m.channel === channel && m.payload === schema) onChange();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch {
      down(c);
      return;
    }
    if (client !== c || closed) return;
    onChange(); // whatever changed while nobody listened
    confirmedAt = performance.now();
    connected = true;
  };
  const fence = async (c: pg.Client) => {
    if (fencing || !connected || client !== c) return;
    fencing = true;
    const started = performance.now();
    const overdue = setTimeout(() => down(c), trustMs);
    overdue.unref();
    try {
      await c.query('SELECT 1');
      if (client === c) confirmedAt = started;
    } catch {
      down(c);
    } finally {
      clearTimeout(overdue);
      fencing = false;
    }
  };
  const fences = setInterval(() => {
    if (client !== undefined) void fence(client);
  }, fenceMs);
  fences.unref(); // a fence never keeps the process alive
  await connect();
  return {
    get live() {
      return connected && performance.now() - confirmedAt < trustMs;
    },
    async close() {
      closed = true;
      connected = false;
      clearInterval(fences);
      if (timer !== undefined) clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

/** PGlite: one in-process session, so a notification cannot be lost; always live. */
export async function listenPglite(instance: PGlite, channel: string, schema: string, onChange: OnChange): Promise<ChangeListener> {
  let live = true;
  const unlisten = await instance.listen(channel, (payload) => {
    if (payload === schema) onChange();
  });
  return {
    get live() {
      return live;
    },
    async close() {
      if (!live) return;
      live = false;
      if (!instance.closed) await unlisten();
    },
  };
}
