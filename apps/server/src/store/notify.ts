import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';

/**
 * Change notifications from the database (LISTEN/NOTIFY), for in-process caches that must
 * forget what another server process changed. A cache may trust itself only while
 * `live` is true: the listener is connected and LISTENing, so no notification can be
 * missed. Whenever it (re)becomes live, `onChange` runs once, because changes made while it
 * was down were not heard.
 */
export interface ChangeListener {
  readonly live: boolean;
  close(): Promise<void>;
}

/** Called when a notification about the listener's schema arrives (the payload is the schema). */
export type OnChange = () => void;

/**
 * PostgreSQL: one dedicated connection (not from the pool: a pooled client cannot keep
 * LISTENing) that reconnects after a second whenever it drops; not live in between.
 * NOTIFY is database-wide, so the payload names the schema and other schemas' (other
 * deployments', other test suites') notifications are ignored.
 */
export async function listenPostgres(connectionString: string, channel: string, schema: string, onChange: OnChange, retryMs = 1000): Promise<ChangeListener> {
  let client: pg.Client | undefined;
  let live = false;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const down = (c: pg.Client) => {
    if (client !== c) return;
    client = undefined;
    live = false;
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
    live = true;
  };
  await connect();
  return {
    get live() {
      return live;
    },
    async close() {
      closed = true;
      live = false;
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
