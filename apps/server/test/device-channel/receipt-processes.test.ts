import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { UploadReceiptResponse } from '@svc/device-proto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  channelCredentials,
  clientsFor,
  enrollFleetWithRollout,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
} from '../fixtures/device-channel.js';
import { appendReceipts, verifyUpload } from '../../src/resources/release-receipts/commands.js';
import { runUnitOfWork, systemActor } from '../../src/resources/unit-of-work.js';
import { openStore } from '../../src/store/open.js';
import { acceptanceState, checkConsistent, signedReceipt } from '../fixtures/receipt-batches.js';

/**
 * Receipt acceptance across real server processes on one PostgreSQL (each a child running the
 * built device channel, test/helpers/receipt-server-child.mjs, beside this process's own):
 * receipts for one deployment arriving at different processes are each stored once, with the
 * counters and waves right; a process SIGKILLed in the middle of a batch (its audit rows
 * written, before COMMIT) loses no receipt it answered OK for, and a retry stores the rest once.
 * PGlite is one process by construction, so this suite needs PostgreSQL; without
 * SVC_TEST_DATABASE_URL it skips loudly, and fails under CI=true.
 */
const CHILD = join(import.meta.dirname, '..', 'helpers', 'receipt-server-child.mjs');
const url = process.env.SVC_TEST_DATABASE_URL;
if (url === undefined && process.env.CI === 'true') throw new Error('receipt process suite: SVC_TEST_DATABASE_URL must be set under CI');
if (url === undefined) console.warn('SKIPPED: receipt process suite needs SVC_TEST_DATABASE_URL (several processes on one database)');

interface ServerChild {
  proc: ChildProcess;
  addr: string;
  /** Resolves when the child parked mid-batch (`AT`). */
  parked: Promise<void>;
  exited: Promise<void>;
}

async function startChild(f: ChannelFixture, parkAt?: number): Promise<ServerChild> {
  const cfgFile = join(f.dataDir, `receipt-child-${randomUUID()}.json`);
  await writeFile(cfgFile, JSON.stringify({ open: f.t.openOptions, dataDir: f.dataDir, ...(parkAt === undefined ? {} : { parkAt }) }));
  const proc = spawn(process.execPath, [CHILD, cfgFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let onPark: () => void = () => undefined;
  const parked = new Promise<void>((resolve) => (onPark = resolve));
  const addr = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child did not start: ${stderr}`)), 30_000);
    createInterface({ input: proc.stdout }).on('line', (l) => {
      const m = /^LISTENING (\d+)$/.exec(l);
      if (m) {
        clearTimeout(timer);
        resolve(`127.0.0.1:${m[1]}`);
      }
      if (l.startsWith('AT ')) onPark();
    });
    void exited.then(() => reject(new Error(`child exited: ${stderr}`)));
  });
  return { proc, addr, parked, exited };
}

const upload = (c: ReturnType<typeof clientsFor>, bytes: Buffer) => unary<UploadReceiptResponse>((cb) => c.device.uploadReceipt({ envelope: bytes }, cb));

describe.skipIf(url === undefined)('receipts across server processes on one PostgreSQL', () => {
  let f: ChannelFixture;
  const children: ServerChild[] = [];
  const open: ReturnType<typeof clientsFor>[] = [];

  beforeAll(async () => {
    f = await startChannelFixture('postgres');
  });
  afterAll(async () => {
    for (const c of open) c.close();
    for (const c of children) {
      c.proc.kill('SIGKILL');
      await c.exited;
    }
    await f?.dispose();
  });

  const clientsAt = (addr: string, d: EnrolledDevice) => {
    const c = clientsFor(addr, channelCredentials(f.serverCaPem, { keyPem: d.key.keyPem, certPem: d.certPem }));
    open.push(c);
    return c;
  };

  it('three processes accept receipts for one deployment: each stored once, duplicates across processes recognized, counters and waves right', async () => {
    const names = Array.from({ length: 60 }, (_, i) => `mp-${String(i).padStart(2, '0')}`);
    const { devs: fleet, rel } = await enrollFleetWithRollout(f, names, {
      bytes: Buffer.from('multi-process\n'),
      placementPath: '/etc/edge/mp.conf',
      version: '3.0.0',
      waves: [
        { name: 'one', percent: 20 },
        { name: 'two', percent: 60 },
        { name: 'three', percent: 100 },
      ],
    });
    const a = await startChild(f);
    const b = await startChild(f);
    children.push(a, b);
    const addrs = [f.addr, a.addr, b.addr];
    const receipts = fleet.map((d) => signedReceipt(f.tenantId, rel, d));
    // every receipt at one process, and the same bytes at the next one, all at once
    const calls = fleet.flatMap((d, i) => [upload(clientsAt(addrs[i % 3]!, d), receipts[i]!), upload(clientsAt(addrs[(i + 1) % 3]!, d), receipts[i]!)]);
    const out = await Promise.all(calls);
    for (let i = 0; i < fleet.length; i++) {
      const [x, y] = [out[2 * i]!, out[2 * i + 1]!];
      expect([x.duplicate, y.duplicate].sort()).toEqual([false, true]);
      expect(x.receiptId).toBe(y.receiptId);
    }
    const s = await acceptanceState(f.t.store.db, rel.deploymentId);
    checkConsistent(s);
    expect(s.receipts).toHaveLength(60);
    expect(s.counters.n_committed).toBe(60);
    expect(s.waves.map((w) => [w.state, w.done, w.size])).toEqual([
      ['done', 12, 12],
      ['done', 24, 24],
      ['done', 24, 24],
    ]);
  }, 180_000);

  it('a process killed mid-batch loses no receipt it answered OK for; a retry stores the rest once', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `crash-${i}`);
    const { devs: fleet, rel } = await enrollFleetWithRollout(f, names, {
      bytes: Buffer.from('crash\n'),
      placementPath: '/etc/edge/crash.conf',
      version: '4.0.0',
      waves: [
        { name: 'first', percent: 50 },
        { name: 'rest', percent: 100 },
      ],
    });
    // parks at the 5th accepted receipt's audit row: inside the batch after the first four
    const child = await startChild(f, 5);
    children.push(child);
    const receipts = fleet.map((d) => signedReceipt(f.tenantId, rel, d));
    const atChild = fleet.map((d) => clientsAt(child.addr, d));

    const acked = new Map<string, string>();
    const first = await Promise.all([0, 1, 2, 3].map((i) => upload(atChild[i]!, receipts[i]!)));
    first.forEach((r, i) => {
      expect(r.duplicate).toBe(false);
      acked.set(fleet[i]!.name, r.receiptId);
    });
    const second = [4, 5, 6, 7].map((i) =>
      upload(atChild[i]!, receipts[i]!).then(
        (r) => acked.set(fleet[i]!.name, r.receiptId),
        () => undefined,
      ),
    );
    await child.parked;
    child.proc.kill('SIGKILL');
    await child.exited;
    await Promise.all(second);

    // every OK is stored, with the id it was answered with; nothing of the killed batch is
    let s = await acceptanceState(f.t.store.db, rel.deploymentId);
    checkConsistent(s);
    expect(new Map(s.receipts.map((r) => [r.device_name, r.id]))).toEqual(acked);
    expect(s.receipts).toHaveLength(4);

    // the devices retry every receipt not acknowledged (and, here, every one) at another process
    const retry = await Promise.all(fleet.map((d, i) => upload(clientsAt(f.addr, d), receipts[i]!)));
    retry.forEach((r, i) => {
      const before = acked.get(fleet[i]!.name);
      if (before === undefined) expect(r.duplicate).toBe(false);
      else expect(r).toEqual({ receiptId: before, duplicate: true });
    });
    s = await acceptanceState(f.t.store.db, rel.deploymentId);
    checkConsistent(s);
    expect(s.receipts).toHaveLength(8);
    expect(s.counters.n_committed).toBe(8);
    expect(s.waves.map((w) => [w.state, w.done])).toEqual([
      ['done', 4],
      ['done', 4],
    ]);
  }, 180_000);

  it('a batch that waited for the deployment lock counts on the waves the holder committed', async () => {
    const names = Array.from({ length: 2 }, (_, i) => `lock-${i}`);
    const { devs: fleet, rel } = await enrollFleetWithRollout(f, names, {
      bytes: Buffer.from('lock\n'),
      placementPath: '/etc/edge/lock.conf',
      version: '5.0.0',
    });
    // a second connection pool on the same schema: another process as far as PostgreSQL can tell
    const other = await openStore(f.t.openOptions);
    try {
      const caDers = await f.ctx.cas.certificatesDer(f.tenantId, new Date());
      const [va, vb] = await Promise.all(
        fleet.map((d) =>
          verifyUpload(f.t.store.db, {
            tenant: f.tenantId,
            deviceName: d.name,
            connectionCertificateDer: d.certDer,
            envelopeBytes: signedReceipt(f.tenantId, rel, d),
            now: new Date(),
            caDers,
          }),
        ),
      );
      const scope = { tenant: f.tenantId, actor: systemActor('test'), now: new Date() };
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      let holding: () => void = () => undefined;
      const held = new Promise<void>((r) => (holding = r));
      // A appends and holds the deployment row (taken last) until the gate opens, then commits
      const a = runUnitOfWork(f.t.store.db, scope, async (uow) => {
        const out = await appendReceipts(uow, [va!]);
        holding();
        await gate;
        return out;
      });
      await held;
      // B appends meanwhile and waits for that row lock
      const b = runUnitOfWork(other.db, scope, (uow) => appendReceipts(uow, [vb!]));
      const waiting = async () =>
        Number(
          (
            await f.t.store.db
              .selectFrom(
                sql<{ n: number }>`(SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database())`.as('x'),
              )
              .select('n')
              .executeTakeFirstOrThrow()
          ).n,
        );
      for (let i = 0; i < 100 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
      release();
      const [oa, ob] = await Promise.all([a, b]);
      expect([oa[0], ob[0]].map((o) => o !== undefined && 'ok' in o)).toEqual([true, true]);
      const s = await acceptanceState(f.t.store.db, rel.deploymentId);
      checkConsistent(s);
      expect(s.waves.map((w) => [w.state, w.done])).toEqual([['done', 2]]);
    } finally {
      await other.close();
    }
  });
});
