import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenPostgres } from '../../src/store/notify.js';

/**
 * The PostgreSQL change listener (store/notify.ts) through a real TCP relay in front of the
 * test database: a connection that silently stops delivering (the relay stops forwarding, no
 * FIN, no error) stops being live within `trustMs` because its fence query never completes, then
 * it reconnects and reports a change (caches clear). Needs PostgreSQL: without
 * SVC_TEST_DATABASE_URL it skips loudly, and fails under CI=true.
 */
const pgUrl = process.env.SVC_TEST_DATABASE_URL;
if (!pgUrl && process.env.CI === 'true') throw new Error('store-notify: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('SKIPPED: store-notify needs SVC_TEST_DATABASE_URL (PostgreSQL LISTEN/NOTIFY)');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await sleep(20);
  return cond();
}

/** Forwards TCP to the database; `freeze()` stops forwarding on the connections open now. */
function relayTo(host: string, port: number) {
  const open: Socket[][] = [];
  const server: Server = createServer((down) => {
    const up = connect(port, host);
    down.pipe(up);
    up.pipe(down);
    const pair = [down, up];
    open.push(pair);
    for (const s of pair) s.on('error', () => pair.forEach((x) => x.destroy()));
  });
  return {
    server,
    freeze() {
      for (const pair of open.splice(0)) for (const s of pair) s.pause();
    },
    close() {
      for (const pair of open.splice(0)) for (const s of pair) s.destroy();
      server.close();
    },
  };
}

describe.skipIf(!pgUrl)('change listener on PostgreSQL', () => {
  const schema = `notify_test_${process.pid}`;
  const channel = 'svc_notify_test';
  let relay: ReturnType<typeof relayTo>;
  let relayUrl: string;
  let notifier: pg.Client;

  beforeAll(async () => {
    const target = new URL(pgUrl!);
    relay = relayTo(target.hostname, Number(target.port || 5432));
    await new Promise<void>((r) => relay.server.listen(0, '127.0.0.1', r));
    const addr = relay.server.address();
    if (addr === null || typeof addr === 'string') throw new Error('no relay port');
    target.hostname = '127.0.0.1';
    target.port = String(addr.port);
    relayUrl = target.toString();
    notifier = new pg.Client({ connectionString: pgUrl });
    await notifier.connect();
  });
  afterAll(async () => {
    await notifier?.end();
    relay?.close();
  });

  it("hears its schema's notifications, not another schema's", async () => {
    let changes = 0;
    const l = await listenPostgres(relayUrl, channel, schema, () => changes++);
    try {
      expect(l.live).toBe(true);
      expect(changes).toBe(1); // at connect: whatever changed while nobody listened
      await notifier.query('SELECT pg_notify($1, $2)', [channel, 'another_schema']);
      await notifier.query('SELECT pg_notify($1, $2)', [channel, schema]);
      expect(await until(() => changes === 2, 2000)).toBe(true);
      await sleep(100);
      expect(changes).toBe(2);
    } finally {
      await l.close();
    }
  });

  it('a connection that silently stops delivering is not live within trustMs, then reconnects and reports a change', async () => {
    let changes = 0;
    const l = await listenPostgres(relayUrl, channel, schema, () => changes++, { fenceMs: 100, trustMs: 800, retryMs: 100 });
    try {
      await sleep(400);
      expect(l.live).toBe(true); // the fences complete, so it stays live past its first trustMs
      await sleep(600);
      expect(l.live).toBe(true);
      relay.freeze();
      // a notification now is lost on the frozen connection: the listener must stop being trusted
      await notifier.query('SELECT pg_notify($1, $2)', [channel, schema]);
      expect(await until(() => !l.live, 2000)).toBe(true);
      expect(changes).toBe(1);
      // the overdue fence dropped the connection; the reconnect (through the relay, new
      // connections are forwarded) reports a change, so caches forget what they missed
      expect(await until(() => l.live, 5000)).toBe(true);
      expect(changes).toBe(2);
    } finally {
      await l.close();
    }
  });
});
