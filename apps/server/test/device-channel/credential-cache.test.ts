import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { status } from '@grpc/grpc-js';
import type { CheckInResponse } from '@svc/device-proto';
import { sha256Digest } from '@svc/release-core';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { newSecret } from '../../src/auth/secrets.js';
import { DeviceCredentialCache } from '../../src/device-channel/credential-cache.js';
import { SERVER_TUNING } from '../../src/limits.js';
import { insertApiKey } from '../../src/resources/api-keys/queries.js';
import { markStaleDevicesOffline } from '../../src/resources/devices/queries/presence.js';
import { DEVICE_CREDENTIALS_CHANNEL } from '../../src/store/migrations/0042_device_credential_notify.js';
import { testConfig } from '../helpers/app.js';
import { availableDrivers } from '../helpers/store.js';
import {
  channelCredentials,
  clientsFor,
  enrollDevice,
  refusal,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
} from '../fixtures/device-channel.js';

/**
 * The device channel remembers device authentications per process (device-channel/credential-cache.ts)
 * and every change that can end one clears every process's cache at COMMIT (migration 0042).
 * Here: the cache answers repeated calls; a device decommissioned through the REST API of this
 * process is refused at its very next call here (the process clears its own cache) and, on
 * PostgreSQL, by another server process as soon as the notification arrives (milliseconds); one
 * decommissioned or deleted by hand in SQL likewise; with the listeners cut, a revocation by hand
 * is refused at once.
 */
const CHILD = join(import.meta.dirname, '..', 'helpers', 'receipt-server-child.mjs');

const checkIn = (c: ReturnType<typeof clientsFor>) => unary<CheckInResponse>((cb) => c.device.checkIn({ inventory: undefined }, cb));

/**
 * The refusal of a device's calls after a change made by hand: the database announces it at
 * COMMIT and a process hears it within milliseconds, so this calls until refused, for at most `ms`.
 */
async function refusedWithin(c: ReturnType<typeof clientsFor>, ms = 2000): ReturnType<typeof refusal> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await refusal(checkIn(c)).catch(() => undefined);
    if (r !== undefined || Date.now() > deadline) return r ?? refusal(checkIn(c));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A device-channel server process on the fixture's schema and data dir (the built channel). */
async function startChild(f: ChannelFixture): Promise<{ proc: ChildProcess; addr: string }> {
  const cfgFile = join(f.dataDir, `credential-child-${randomUUID()}.json`);
  await writeFile(cfgFile, JSON.stringify({ open: f.t.openOptions, dataDir: f.dataDir }));
  const proc = spawn(process.execPath, [CHILD, cfgFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const addr = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child did not start: ${stderr}`)), 30_000);
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /^LISTENING (\d+)$/.exec(l);
      if (m) {
        clearTimeout(timer);
        resolve(`127.0.0.1:${m[1]}`);
      }
    });
    proc.once('exit', () => reject(new Error(`child exited: ${stderr}`)));
  });
  return { proc, addr };
}

describe.each(availableDrivers())('device authentication cache on %s', (driver) => {
  let f: ChannelFixture;
  let app: FastifyInstance;
  let operator: { authorization: string };
  let child: { proc: ChildProcess; addr: string } | undefined;
  const open: ReturnType<typeof clientsFor>[] = [];

  beforeAll(async () => {
    f = await startChannelFixture(driver);
    // the REST API in the same process as the channel, sharing its cache as main.ts does
    app = await buildApp({ store: f.t.store, config: testConfig(), now: () => new Date(), logger: false, deviceCredentials: f.ctx.credentials });
    const secret = newSecret('svck');
    await insertApiKey(f.t.store.db, { tenantId: f.tenantId, name: 'op', role: 'operator', prefix: secret.prefix, keyHash: secret.hash, createdBy: null });
    operator = { authorization: `Bearer ${secret.plaintext}` };
    // the other process trusts the tenant device CA from its start: the first enrollment makes it
    await enroll('first');
    if (driver === 'postgres') child = await startChild(f);
  });

  afterAll(async () => {
    for (const c of open) c.close();
    child?.proc.kill('SIGKILL');
    await app?.close();
    await f?.dispose();
  });

  async function enroll(name: string): Promise<EnrolledDevice> {
    const d = await enrollDevice(f, name);
    open.push(d.clients);
    return d;
  }
  /** The device's mTLS clients on the other server process. */
  function onChild(d: EnrolledDevice): ReturnType<typeof clientsFor> {
    const c = clientsFor(child!.addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    open.push(c);
    return c;
  }
  /** The device id this process remembers for the device's certificate, if any. */
  const known = (d: EnrolledDevice) => f.ctx.credentials.deviceIdOf(f.tenantId, d.name, sha256Digest(d.certDer));

  it('a repeated call is answered from the cache', async () => {
    const d = await enroll('cached-1');
    expect(known(d)).toBeUndefined();
    await checkIn(d.clients);
    const id = (await f.t.store.db.selectFrom('devices').select('id').where('name', '=', d.name).executeTakeFirstOrThrow()).id;
    expect(known(d)).toBe(id);
    await checkIn(d.clients);
  });

  it("a first enrollment forgets nobody's authentication; a re-enrolled device's old certificate is refused at once", async () => {
    const other = await enroll('stays-remembered');
    const old = await enroll('re-enrolled');
    await checkIn(other.clients);
    await checkIn(old.clients);
    expect(known(other)).toBeDefined();
    expect(known(old)).toBeDefined();
    // a first enrollment has nothing to forget
    await enroll('brand-new');
    expect(known(other)).toBeDefined();
    expect(known(old)).toBeDefined();
    // (the re-enrollment's notification, migration 0042, then clears the whole cache of every process)
    const again = await enroll('re-enrolled');
    expect(known(old)).toBeUndefined();
    const r = await refusal(checkIn(old.clients));
    expect(r.code).toBe(status.PERMISSION_DENIED);
    await checkIn(again.clients);
    await checkIn(other.clients);
  });

  it('a heartbeat never clears the caches, and still records the way back online', async () => {
    const d = await enroll('cached-2');
    await checkIn(d.clients);
    await checkIn(d.clients);
    expect(known(d)).toBeDefined();
    // the offline detector: not a credential change either
    await markStaleDevicesOffline(f.t.store.db, new Date(Date.now() + 1000));
    await checkIn(d.clients);
    // back online through the heartbeat buffer (last-seen.ts): the check-in read the status itself
    await f.ctx.lastSeen.flush();
    expect(known(d)).toBeDefined();
    expect((await f.t.store.db.selectFrom('devices').select('status').where('name', '=', d.name).executeTakeFirstOrThrow()).status).toBe('online');
    const history = await f.t.store.db
      .selectFrom('device_history')
      .innerJoin('devices', 'devices.id', 'device_history.device_id')
      .select('event')
      .where('devices.name', '=', d.name)
      .orderBy('at')
      .execute();
    // online at enrollment, so the first two check-ins add nothing; the one after the detector does
    expect(history.map((h) => h.event)).toEqual(['enrolled', 'online']);
  });

  it('the heartbeat writes notify nobody: the buffer flush, the offline detector, the way back online', async () => {
    const d = await enroll('hb-quiet');
    const fence = await enroll('hb-fence');
    const db = f.t.store.db;
    let heard = 0;
    const listener = await f.t.store.listen(DEVICE_CREDENTIALS_CHANNEL, () => (heard += 1));
    try {
      await new Promise((r) => setTimeout(r, 300));
      const before = heard;
      const seenBefore = (await db.selectFrom('devices').select('last_seen').where('name', '=', d.name).executeTakeFirstOrThrow()).last_seen;
      await checkIn(d.clients);
      await f.ctx.lastSeen.flush();
      const seen = (await db.selectFrom('devices').select('last_seen').where('name', '=', d.name).executeTakeFirstOrThrow()).last_seen;
      expect(seen!.getTime()).toBeGreaterThan(seenBefore?.getTime() ?? 0);
      await markStaleDevicesOffline(db, new Date(Date.now() + 1000));
      await checkIn(d.clients);
      await f.ctx.lastSeen.flush();
      expect((await db.selectFrom('devices').select('status').where('name', '=', d.name).executeTakeFirstOrThrow()).status).toBe('online');
      // notifications arrive in commit order: once this one is heard, any of the writes above would have been
      await sql`UPDATE devices SET status = 'decommissioned' WHERE name = ${fence.name}`.execute(db);
      const deadline = Date.now() + 2000;
      while (heard === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 100));
      expect(heard).toBe(before + 1);
    } finally {
      await listener.close();
    }
  });

  it('decommissioned through the REST API: refused at the very next call on this process, and on another once notified', async () => {
    const d = await enroll('rest-decom');
    const other = child === undefined ? undefined : onChild(d);
    for (let i = 0; i < 2; i++) {
      await checkIn(d.clients);
      if (other) await checkIn(other);
    }
    const res = await app.inject({ method: 'DELETE', url: `/api/v1/devices/${d.name}`, headers: operator });
    expect(res.statusCode).toBe(204);
    const here = await refusal(checkIn(d.clients));
    expect(here.code).toBe(status.PERMISSION_DENIED);
    expect(here.details).toContain('decommissioned');
    // another process clears when the notification arrives: PostgreSQL signals it at COMMIT,
    // before the REST call returns, but its delivery races this call by a few milliseconds
    if (other) expect((await refusedWithin(other)).code).toBe(status.PERMISSION_DENIED);
  });

  it('decommissioned or deleted by hand in SQL: refused as soon as the notification is heard', async () => {
    const a = await enroll('sql-decom');
    const b = await enroll('sql-delete');
    const others = child === undefined ? [] : [onChild(a), onChild(b)];
    for (const c of [a.clients, b.clients, ...others]) await checkIn(c);
    await sql`UPDATE devices SET status = 'decommissioned' WHERE name = ${a.name}`.execute(f.t.store.db);
    await sql`DELETE FROM devices WHERE name = ${b.name}`.execute(f.t.store.db);
    expect((await refusedWithin(a.clients)).details).toContain('decommissioned');
    expect((await refusedWithin(b.clients)).details).toContain('removed');
    for (const c of others) expect((await refusedWithin(c)).code).toBe(status.PERMISSION_DENIED);
  });

  it.skipIf(driver !== 'postgres')('with the listeners cut, a revocation by hand is still refused, also after they reconnect', async () => {
    const d = await enroll('listener-cut');
    const other = onChild(d);
    for (let i = 0; i < 2; i++) for (const c of [d.clients, other]) await checkIn(c);
    const db = f.t.store.db;
    // each listener's backend has exited when this returns (the 5 s wait of pg_terminate_backend)
    const cut = await sql<{ n: number }>`SELECT count(pg_terminate_backend(pid, 5000))::int AS n FROM pg_stat_activity
      WHERE application_name = ${`svc-listener:${f.t.store.schema}`}`.execute(db);
    // this process's and the child's device listeners, and the REST app's API-key listener
    expect(cut.rows[0]!.n).toBeGreaterThanOrEqual(3);
    await sql`UPDATE devices SET status = 'decommissioned' WHERE name = ${d.name}`.execute(db);
    // the notification reached nobody: refused because a cache whose listener is down is not trusted
    for (const c of [d.clients, other]) expect((await refusal(checkIn(c))).code).toBe(status.PERMISSION_DENIED);
    await new Promise((r) => setTimeout(r, 1500));
    const back = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE application_name = ${`svc-listener:${f.t.store.schema}`}`.execute(db);
    expect(back.rows[0]!.n).toBeGreaterThanOrEqual(3);
    for (const c of [d.clients, other]) expect((await refusal(checkIn(c))).code).toBe(status.PERMISSION_DENIED);
  });
});

describe('DeviceCredentialCache', () => {
  it('a key remembered again is the newest, so a busy device is not the one evicted', () => {
    const cache = new DeviceCredentialCache({ live: true }, { maxEntries: 2 });
    for (const k of ['a', 'b', 'a', 'c']) cache.remember(k, k, cache.begin());
    expect(cache.lookup('a')).toBe('a');
    expect(cache.lookup('b')).toBeUndefined();
    expect(cache.lookup('c')).toBe('c');
  });

  it('a forgotten device loses what was remembered for it up to then, and no one else does', () => {
    let t = 1;
    const cache = new DeviceCredentialCache({ live: true }, { clock: () => t });
    cache.remember('fp-a1', 'id-a', cache.begin());
    cache.remember('fp-b', 'id-b', cache.begin());
    // a lookup already running when the device is forgotten remembers nothing
    const running = cache.begin();
    t = 2;
    cache.forgetDevice('t1', 'a');
    cache.remember('fp-a0', 'id-a', running);
    expect(cache.deviceIdOf('t1', 'a', 'fp-a1')).toBeUndefined();
    expect(cache.deviceIdOf('t1', 'a', 'fp-a0')).toBeUndefined();
    expect(cache.deviceIdOf('t1', 'b', 'fp-b')).toBe('id-b');
    // the same name in another tenant is another device
    cache.remember('fp-other-a', 'id-other', cache.begin());
    t = 3;
    expect(cache.deviceIdOf('t2', 'a', 'fp-other-a')).toBe('id-other');
    // what is remembered after the forgetting answers again
    cache.remember('fp-a2', 'id-a', cache.begin());
    expect(cache.deviceIdOf('t1', 'a', 'fp-a2')).toBe('id-a');
  });

  it(`past ${SERVER_TUNING.forgottenDeviceEntries} devices forgotten one by one, the whole cache is cleared`, () => {
    let t = 1;
    const cache = new DeviceCredentialCache({ live: true }, { clock: () => t });
    cache.remember('fp-b', 'id-b', cache.begin());
    t = 2;
    for (let i = 0; i < SERVER_TUNING.forgottenDeviceEntries; i++) cache.forgetDevice('t1', `d-${i}`);
    expect(cache.deviceIdOf('t1', 'b', 'fp-b')).toBe('id-b');
    cache.forgetDevice('t1', 'one-more');
    expect(cache.deviceIdOf('t1', 'b', 'fp-b')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
