import 'reflect-metadata';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { CheckInResponse, PingResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFUSED_CAPACITY, RETRY_AFTER_MS } from '../../src/device-channel/admission.js';
import { enrollDevice, startChannelFixture, unary, type ChannelFixture, type EnrolledDevice } from '../fixtures/device-channel.js';

/**
 * The per-process cap on device connections (device-channel/admission.ts): with the cap at
 * two, a third device's connection is answered DEVICE_CHANNEL_BUSY (RESOURCE_EXHAUSTED) with
 * the `retry-after-ms` trailer and closed by the server; calls on admitted connections go on;
 * once an admitted device disconnects, the refused one gets in on its next connection.
 * Real gRPC over mTLS on loopback; storage plays no part (PGlite).
 */
const INVENTORY = { agentVersion: '0.1.0', profile: 'linux-arm64', product: 'x', slots: [], attributes: undefined };

/** Polls `cond` until it holds; bound by the server's progress, with a backstop for a stuck one. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const backstop = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > backstop) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('device connection cap', () => {
  let f: ChannelFixture;
  let devices: EnrolledDevice[];
  beforeAll(async () => {
    f = await startChannelFixture('pglite', { maxConnections: 2, retryAfterMs: 1500 });
    // one at a time: each enrollment's own connection closes before the next opens
    devices = [];
    for (const name of ['cap-a', 'cap-b', 'cap-c']) {
      devices.push(await enrollDevice(f, name));
      await until(() => f.ctx.admission.admitted === 0, 'the enrollment connection closed');
    }
  });
  afterAll(async () => {
    for (const d of devices ?? []) d.clients.close();
    await f?.dispose();
  });

  const checkIn = (d: EnrolledDevice) => unary<CheckInResponse>((cb) => d.clients.device.checkIn({ inventory: INVENTORY }, cb));
  const ping = (d: EnrolledDevice) => unary<PingResponse>((cb) => d.clients.device.ping({}, cb));
  const refusedWith = async (p: Promise<unknown>) => {
    const err = (await p.then(
      () => {
        throw new Error('call succeeded but a refusal was expected');
      },
      (e: unknown) => e,
    )) as ServiceError;
    return {
      code: err.code,
      svcCode: err.metadata?.get('svc-error-code')[0]?.toString(),
      retryAfterMs: err.metadata?.get(RETRY_AFTER_MS)[0]?.toString(),
      details: err.details,
    };
  };

  it('refuses the connection beyond the cap with RESOURCE_EXHAUSTED and retry-after-ms, keeps the admitted ones, admits it once one left', async () => {
    const [a, b, c] = devices as [EnrolledDevice, EnrolledDevice, EnrolledDevice];
    await checkIn(a);
    await checkIn(b);
    expect(f.ctx.admission.admitted).toBe(2);

    const refused = await refusedWith(checkIn(c));
    expect(refused).toMatchObject({ code: status.RESOURCE_EXHAUSTED, svcCode: 'DEVICE_CHANNEL_BUSY', retryAfterMs: '1500' });
    expect(refused.details).toMatch(/maximum of 2 device connections/);
    expect(f.ctx.admission.refusedCount).toBe(1);
    // the refused call never reached the handler: nothing of c was heartbeated
    expect(f.ctx.lastSeen.size).toBeLessThanOrEqual(2);

    // the admitted connections are untouched: more calls on each, no new connection counted
    await Promise.all([ping(a), ping(b), checkIn(a)]);
    expect(f.ctx.admission.admitted).toBe(2);
    // the refusal's marker travels as a request header: one a client sends itself is removed, not obeyed
    const forged = new Metadata();
    forged.set(REFUSED_CAPACITY, '1');
    await unary<PingResponse>((cb) => b.clients.device.ping({}, forged, cb));
    expect(f.ctx.admission.refusedCount).toBe(1);

    // still full: c's next connection is refused again (the server closed the first one)
    expect(await refusedWith(ping(c))).toMatchObject({ code: status.RESOURCE_EXHAUSTED, svcCode: 'DEVICE_CHANNEL_BUSY' });
    expect(f.ctx.admission.refusedCount).toBe(2);

    // a leaves: its slot is free once its connection closed, and c gets in
    a.clients.close();
    await until(() => f.ctx.admission.admitted === 1, "a's connection closed on the server");
    const res = await checkIn(c);
    expect(res.checkInIntervalS).toBeGreaterThan(0);
    expect(f.ctx.admission.admitted).toBe(2);
    expect(f.ctx.admission.refusedCount).toBe(2);
  }, 60_000);
});
