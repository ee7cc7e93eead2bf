/**
 * What one check-in costs the database, over the real device channel: once the device's
 * authentication is remembered (credential-cache.ts) and its deployment's pointer is kept
 * (assignment-pointers.ts), a check-in is ONE statement (`checkInState`), the heartbeat going
 * through the per-process buffer. And what is kept never hides a change: an accepted receipt,
 * a new rollout, an abort and a decommission all show at the device's very next check-in.
 */
import 'reflect-metadata';
import { status } from '@grpc/grpc-js';
import type { CheckInResponse, UploadReceiptResponse } from '@svc/device-proto';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decommissionDevice } from '../../src/resources/devices/commands.js';
import { controlRollout } from '../../src/resources/rollouts/commands.js';
import { runUnitOfWork, type Actor } from '../../src/resources/unit-of-work.js';
import { availableDrivers } from '../helpers/store.js';
import { signedReceipt } from '../fixtures/receipt-batches.js';
import {
  publishSignedRollout,
  refusal,
  startRolloutFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
  type PublishedRelease,
} from '../fixtures/device-channel.js';
import { AssignmentPointers } from '../../src/device-channel/assignment-pointers.js';
import type { DeviceAssignment } from '../../src/device-channel/ports.js';
import type { Db } from '../../src/store/tx.js';

const operator: Actor = { name: 'ops@example.com', credential: 'session', requestId: null };

/** Counts the statements run through a Kysely instance (each one round trip to the database). */
class StatementCounter implements KyselyPlugin {
  count = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.count += 1;
    return args.node;
  }
  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}

describe.each(availableDrivers())('device channel: the reads of a check-in on %s', (driver) => {
  let f: ChannelFixture;
  let devs: EnrolledDevice[];
  let rel: PublishedRelease;
  let dispose: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const r = await startRolloutFixture(driver, ['cr-a', 'cr-b', 'cr-c', 'cr-d'], { bytes: Buffer.from('conf\n'), placementPath: '/etc/edge/cr.conf' });
    ({ f, dispose, devs } = r);
    rel = r.rel;
  });
  afterAll(() => dispose?.());

  const checkIn = (dev: EnrolledDevice) => unary<CheckInResponse>((cb) => dev.clients.device.checkIn({ inventory: undefined }, cb));
  const listed = async (dev: EnrolledDevice) => (await checkIn(dev)).assignments.map((a) => a.rolloutId);
  const upload = (dev: EnrolledDevice) =>
    unary<UploadReceiptResponse>((cb) => dev.clients.device.uploadReceipt({ envelope: signedReceipt(f.tenantId, rel, dev) }, cb));
  /** The statements the channel's handlers run during `fn` (the heartbeat buffer and the receipt pipeline have their own handle). */
  async function statementsOf<T>(fn: () => Promise<T>): Promise<{ value: T; statements: number }> {
    const plain = f.ctx.db;
    const counter = new StatementCounter();
    f.ctx.db = plain.withPlugin(counter);
    try {
      const value = await fn();
      return { value, statements: counter.count };
    } finally {
      f.ctx.db = plain;
    }
  }
  const asOperator = <T>(fn: Parameters<typeof runUnitOfWork<T>>[2]) =>
    runUnitOfWork(f.t.store.db, { tenant: f.tenantId, actor: operator, now: new Date() }, fn);

  it('one statement per check-in once the device is known: status, inventory, log requests and work together', async () => {
    const [a, b] = devs as [EnrolledDevice, EnrolledDevice];
    // first check-in of this process: the authentication (one read) and the deployment's pointer (read once for every device)
    const first = await statementsOf(() => listed(a));
    expect(first.value).toEqual([rel.rolloutId]);
    expect(first.statements).toBeGreaterThan(2);
    const again = await statementsOf(() => listed(a));
    expect(again).toEqual({ value: [rel.rolloutId], statements: 1 });
    // another device of the same deployment: its own authentication, then the same single statement
    expect(await statementsOf(() => listed(b))).toEqual({ value: [rel.rolloutId], statements: 2 });
    expect(await statementsOf(() => listed(b))).toEqual({ value: [rel.rolloutId], statements: 1 });
    // the heartbeats wait in the buffer, written together by its next flush
    expect(f.ctx.lastSeen.size).toBeGreaterThan(0);
  });

  it('an accepted receipt, a new rollout and an abort show at the next check-in, with the pointers kept', async () => {
    const [a, , c] = devs as [EnrolledDevice, EnrolledDevice, EnrolledDevice];
    expect(await listed(c)).toEqual([rel.rolloutId]);
    expect((await upload(c)).duplicate).toBe(false);
    expect(await listed(c)).toEqual([]);

    const next = await publishSignedRollout(f, {
      devices: ['cr-a', 'cr-c'],
      bytes: Buffer.from('conf 2\n'),
      placementPath: '/etc/edge/cr.conf',
      version: '2.0.0',
    });
    expect(await listed(a)).toEqual([rel.rolloutId, next.rolloutId]);
    expect(await listed(c)).toEqual([next.rolloutId]);
    await asOperator((uow) => controlRollout(uow, { id: next.rolloutId, action: 'abort' }));
    expect(await listed(a)).toEqual([rel.rolloutId]);
    expect(await listed(c)).toEqual([]);
  });

  it('a decommissioned device is refused at its next check-in, its authentication still remembered', async () => {
    const d = devs[3]!;
    expect(await listed(d)).toEqual([rel.rolloutId]);
    expect(await statementsOf(() => listed(d))).toMatchObject({ statements: 1 });
    await asOperator((uow) => decommissionDevice(uow, { name: d.name }));
    // the very next call, whether or not this process has heard the notification yet
    expect(await refusal(checkIn(d))).toMatchObject({ code: status.PERMISSION_DENIED, details: `device ${d.name}: decommissioned` });
  });
});

describe('assignment pointers (device-channel/assignment-pointers.ts)', () => {
  const pointer = (id: string): DeviceAssignment => ({ rollout_id: `r-${id}`, kind: 'signed' });
  it('reads a deployment once, keeps at most its bound (the oldest read goes first), and never keeps a miss or a failure', async () => {
    const reads: string[][] = [];
    let fail = false;
    const pointers = new AssignmentPointers(async (_db, ids) => {
      reads.push([...ids]);
      if (fail) throw new Error('database down');
      return new Map(ids.filter((id) => id !== 'gone').map((id) => [id, pointer(id)]));
    }, 2);
    const db = {} as Db;
    expect(await pointers.assignmentsOf(db, [])).toEqual([]);
    expect(await pointers.assignmentsOf(db, ['x', 'y'])).toEqual([pointer('x'), pointer('y')]);
    expect(await pointers.assignmentsOf(db, ['y', 'x'])).toEqual([pointer('y'), pointer('x')]);
    expect(reads).toEqual([['x', 'y']]);
    // check-ins arriving together share one read
    await Promise.all([pointers.assignmentsOf(db, ['z']), pointers.assignmentsOf(db, ['z'])]);
    expect(reads).toEqual([['x', 'y'], ['z']]);
    expect(pointers.size).toBe(2);
    expect(await pointers.assignmentsOf(db, ['x'])).toEqual([pointer('x')]);
    expect(reads.at(-1)).toEqual(['x']);
    expect(await pointers.assignmentsOf(db, ['gone', 'x'])).toEqual([pointer('x')]);
    await Promise.resolve();
    expect(await pointers.assignmentsOf(db, ['gone'])).toEqual([]);
    expect(reads.filter((r) => r.includes('gone'))).toHaveLength(2);
    fail = true;
    await expect(pointers.assignmentsOf(db, ['w'])).rejects.toThrow('database down');
    fail = false;
    expect(await pointers.assignmentsOf(db, ['w'])).toEqual([pointer('w')]);
  });
});
