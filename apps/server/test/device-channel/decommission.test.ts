/**
 * A device decommissioned while it is pending in a signed rollout, over the real device channel
 * (gRPC, mutual TLS): its calls are refused as before, the rollout completes when the other
 * device reports, and after a re-enrollment it gets no work and its receipt is still refused.
 */
import 'reflect-metadata';
import { status } from '@grpc/grpc-js';
import type { CheckInResponse, UploadReceiptResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decommissionDevice } from '../../src/resources/devices/commands.js';
import { rolloutDetail } from '../../src/resources/rollouts/views.js';
import { runUnitOfWork, type Actor } from '../../src/resources/unit-of-work.js';
import { availableDrivers } from '../helpers/store.js';
import { signedReceipt } from '../fixtures/receipt-batches.js';
import {
  enrollDevice,
  refusal,
  startRolloutFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
  type PublishedRelease,
} from '../fixtures/device-channel.js';

const operator: Actor = { name: 'ops@example.com', credential: 'session', requestId: null };

describe.each(availableDrivers())('device channel: a device decommissioned mid-rollout on %s', (driver) => {
  let f: ChannelFixture;
  let a: EnrolledDevice;
  let b: EnrolledDevice;
  let pub: PublishedRelease;

  let dispose: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const r = await startRolloutFixture(driver, ['dm-a', 'dm-b'], { bytes: Buffer.from('conf\n'), placementPath: '/etc/edge/dm.conf' });
    ({ f, dispose } = r);
    pub = r.rel;
    [a, b] = r.devs as [EnrolledDevice, EnrolledDevice];
  });
  afterAll(() => dispose?.());

  const receipt = (dev: EnrolledDevice) => signedReceipt(f.tenantId, pub, dev);
  const checkIn = (dev: EnrolledDevice) => unary<CheckInResponse>((cb) => dev.clients.device.checkIn({ inventory: undefined }, cb));
  const upload = (dev: EnrolledDevice) => unary<UploadReceiptResponse>((cb) => dev.clients.device.uploadReceipt({ envelope: receipt(dev) }, cb));
  const detail = async () => (await rolloutDetail(f.t.store.db, f.tenantId, pub.rolloutId))!;

  it('the rollout completes without it; its calls are refused; re-enrolled it gets no work and its receipt is refused', async () => {
    expect((await checkIn(b)).assignments.map((x) => x.rolloutId)).toEqual([pub.rolloutId]);
    // a receipt that passes verification and is refused only against the signed rollout: the
    // authentication, the parsed certificate and the imported key are now cached for dm-b
    const mismatch = await refusal(
      unary<UploadReceiptResponse>((cb) =>
        b.clients.device.uploadReceipt({ envelope: signedReceipt(f.tenantId, pub, b, { rollout: '00000000-0000-4000-8000-000000000000' }) }, cb),
      ),
    );
    expect(mismatch.svcCode).toBe('RECEIPT_UNEXPECTED');
    await runUnitOfWork(f.t.store.db, { tenant: f.tenantId, actor: operator, now: new Date() }, (uow) => decommissionDevice(uow, { name: 'dm-b' }));
    expect((await detail()).progress).toMatchObject({ pending: 1, skipped: 1 });

    // refused on the channel as before (once this process heard the decommission)
    const deadline = Date.now() + 5000;
    let refused = await refusal(checkIn(b)).catch(() => undefined);
    while (refused === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      refused = await refusal(checkIn(b)).catch(() => undefined);
    }
    expect(refused).toMatchObject({ code: status.PERMISSION_DENIED, details: 'device dm-b: decommissioned' });
    // the same device's valid receipt after those cache hits: refused, nothing stored
    expect(await refusal(upload(b))).toMatchObject({ code: status.PERMISSION_DENIED, details: 'device dm-b: decommissioned' });

    expect((await detail()).status).toBe('running');
    expect((await upload(a)).duplicate).toBe(false);
    const done = await detail();
    expect(done.status).toBe('completed');
    expect(done.progress).toEqual({ pending: 0, committed: 1, rolled_back: 0, failed: 0, installed: 0, skipped: 1 });
    expect(done.devices.map((d) => [d.device, d.state])).toEqual([
      ['dm-a', 'committed'],
      ['dm-b', 'skipped'],
    ]);

    // back in service with a new certificate: the settled row stays settled
    const again = await enrollDevice(f, 'dm-b');
    try {
      expect((await checkIn(again)).assignments).toEqual([]);
      const r = await refusal(upload(again));
      expect(r.svcCode).toBe('RECEIPT_UNEXPECTED');
      expect(r.details).toBe('device: dm-b was decommissioned while it was pending in this deployment (skipped)');
    } finally {
      again.clients.close();
    }
    expect((await detail()).progress).toEqual(done.progress);
    const receipts = await f.t.store.db.selectFrom('release_receipts').select('device_name').execute();
    expect(receipts.map((x) => x.device_name)).toEqual(['dm-a']);
  });
});
