import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import type { UploadReceiptRequest } from '@svc/device-proto';
import { decodePem, parsePrivateKeyPem } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectionMode } from '../src/config.js';
import { enroll } from '../src/channel/enroll.js';
import { certNotAfter } from '../src/channel/identity.js';
import { AgentRuntime } from '../src/channel/runtime.js';
import { CheckInSchedule, SCHEDULE, seededRandom } from '../src/channel/schedule.js';
import { writeFileAtomic } from '../src/journal/io.js';
import { Journal, Orchestrator, type HealthChecker } from '../src/index.js';
import { assignmentFor } from './helpers/agent-fixture.js';
import { FakeMemberDriver } from './helpers/fake-member-driver.js';
import { checkInAnswer, makeChannelPki, scriptedDeviceService, type ChannelPki, type ScriptedDeviceService } from './helpers/mtls-device-service.js';
import { buildRelease, MemoryFetcher, PRODUCT, PROFILE, TENANT } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

/**
 * The agent's connection modes (channel/connection.ts) and check-in schedule (schedule.ts)
 * against a real gRPC DeviceService over mTLS on loopback whose answers are scripted:
 * - per-check-in: the connection closes once idle and the next check-in connects again;
 *   persistent: every call on one connection;
 * - a receipt is uploaded from its outbox bytes and acknowledged exactly once, across
 *   reconnections, in both modes;
 * - RESOURCE_EXHAUSTED with `retry-after-ms`: the agent waits at least that long (at most half
 *   again), then connects again and succeeds;
 * - first check-ins after a start spread over the last interval, reproducibly from a seed;
 * - an enrollment refused for load waits the same way and tries again on a new connection.
 */
let root: { dir: string; cleanup: () => Promise<void> };
let pki: ChannelPki;
let n = 0;
beforeAll(async () => {
  root = await tempDir();
  pki = await makeChannelPki(root.dir);
});
afterAll(() => root?.cleanup());

const healthy: HealthChecker = { check: async () => ({ verdict: 'healthy', results: [{ name: 'p', ok: true, detail: 'exit 0' }] }) };

/** An agent runtime with the device of `pki`; `release` set when the test needs a signed receipt. */
async function agent(
  address: string,
  o: { mode: ConnectionMode; idleCloseS?: number; seed?: number; lastIntervalS?: number; release?: ReturnType<typeof buildRelease> },
) {
  const dataDir = join(root.dir, `agent-${++n}`);
  const logs: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const journal = await Journal.open(join(dataDir, 'journal'));
  if (o.lastIntervalS !== undefined)
    await writeFileAtomic(join(dataDir, 'check-in.json'), new TextEncoder().encode(JSON.stringify({ interval_s: o.lastIntervalS })));
  const runtime = new AgentRuntime({
    address,
    dataDir,
    identity: {
      tenantId: TENANT,
      deviceName: 'dev-1',
      keyPem: pki.deviceKey,
      certPem: pki.deviceCert,
      deviceCaPem: pki.deviceCa,
      serverCaPem: pki.serverCa,
      notAfter: certNotAfter(pki.deviceCert),
    },
    inventory: {
      next: async () => ({ agentVersion: '0.1.0', profile: PROFILE, product: PRODUCT, slots: [], attributes: undefined }),
      delivered: () => undefined,
    },
    connection: { mode: o.mode, idleCloseS: o.idleCloseS ?? 0.3 },
    ...(o.seed === undefined ? {} : { random: seededRandom(o.seed) }),
    log: (level, msg, fields = {}) => logs.push({ level, msg, fields }),
    makeOrchestrator: () =>
      new Orchestrator({
        dataDir,
        journal,
        release: o.release
          ? { settings: { tenant: TENANT, product: PRODUCT, profile: PROFILE, trustDir: '/nonexistent' }, trustedKeys: [o.release.publicKey] }
          : null,
        fetcher: new MemoryFetcher(o.release?.targets ?? new Map()),
        drivers: { model: new FakeMemberDriver('model') },
        health: healthy,
        device: { name: 'dev-1', certificateDer: decodePem(pki.deviceCert, 'CERTIFICATE'), key: parsePrivateKeyPem(pki.deviceKey) },
      }),
  });
  return { runtime, logs, dataDir, journal };
}

/** Waits until `cond` holds: bound by the agent's progress, with a backstop for a stuck one. */
async function until(cond: () => boolean, what: string, backstopMs = 30_000): Promise<void> {
  const end = Date.now() + backstopMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const ofMethod = (svc: ScriptedDeviceService, method: string) => svc.calls.filter((c) => c.method === method);

describe.each(['per-check-in', 'persistent'] as const)('connection mode %s', (mode) => {
  it('check-ins every ~1 s; the receipt is uploaded from the outbox and acknowledged exactly once; per-check-in reconnects for each check-in', async () => {
    const release = buildRelease({ components: [{ name: 'model-a', kind: 'model', content: 'model-a-v2' }] });
    const envelopes: Buffer[] = [];
    const deliveries: (Buffer | undefined)[] = [];
    const svc = await scriptedDeviceService(pki, {
      checkIn: () => ({ ok: checkInAnswer(1) }),
      // the first upload fails (the server was busy): the receipt stays in the outbox for the next check-in
      uploadReceipt: (k, req) => {
        envelopes.push((req as UploadReceiptRequest).envelope);
        deliveries.push((req as UploadReceiptRequest).deliveryReport);
        return k === 0 ? { fail: status.UNAVAILABLE } : { ok: { receiptId: 'r-1', duplicate: false } };
      },
    });
    const a = await agent(svc.address, { mode, release });
    // a finished transaction whose signed receipt waits in the outbox
    expect(await a.runtime.orchestrator.apply(assignmentFor(release, 'tx-1'))).toMatchObject({ status: 'done' });
    // the delivery report waits beside it (docs/delta-updates.md)
    expect(await readdir(join(a.dataDir, 'outbox'))).toEqual(['tx-1.delivery.json', 'tx-1.receipt.json']);
    const stop = new AbortController();
    const running = a.runtime.run(stop.signal);
    try {
      await until(() => ofMethod(svc, 'checkIn').length >= 4, 'four check-ins');
    } finally {
      stop.abort();
      await running;
    }
    const checkIns = ofMethod(svc, 'checkIn');
    const peers = new Set(checkIns.map((c) => c.peer));
    if (mode === 'per-check-in') {
      // each check-in on a connection of its own: the previous one closed after 0.3 s idle
      expect(peers.size).toBe(checkIns.length);
      expect(svc.sessions.opened).toBe(checkIns.length);
      expect(svc.sessions.closed).toBeGreaterThanOrEqual(checkIns.length - 1);
      expect(a.runtime.connection.opened).toBe(checkIns.length);
    } else {
      expect(peers.size).toBe(1);
      expect(svc.sessions.opened).toBe(1);
      expect(a.runtime.connection.opened).toBe(1);
    }
    // the upload rides on the check-in's connection
    for (const u of ofMethod(svc, 'uploadReceipt')) expect(peers.has(u.peer)).toBe(true);
    // two attempts with the same bytes, one acknowledged; then never again
    expect(envelopes).toHaveLength(2);
    expect(envelopes[1]!.equals(envelopes[0]!)).toBe(true);
    // each attempt carries the member's delivery: no live version, so a full download
    for (const d of deliveries)
      expect(JSON.parse(d!.toString('utf8'))).toEqual({
        members: [{ component: 'model-a', method: 'full', bytes_transferred: 'model-a-v2'.length, full_length: 'model-a-v2'.length, attempts: 1, resumes: 0 }],
      });
    expect(await readdir(join(a.dataDir, 'outbox'))).toEqual([]);
    expect(a.journal.get('tx-1')?.state).toBe('reported');
    svc.close();
  }, 60_000);

  it('RESOURCE_EXHAUSTED with retry-after-ms: waits at least that long (at most half again, or the first back-off step when that is longer), connects again, succeeds', async () => {
    const svc = await scriptedDeviceService(pki, {
      checkIn: (k) =>
        k === 0
          ? { fail: status.RESOURCE_EXHAUSTED, trailers: { 'retry-after-ms': '1200', 'svc-error-code': 'DEVICE_CHANNEL_BUSY' } }
          : { ok: checkInAnswer(3600) },
    });
    const a = await agent(svc.address, { mode });
    const stop = new AbortController();
    const running = a.runtime.run(stop.signal);
    try {
      await until(() => ofMethod(svc, 'checkIn').length >= 2, 'the retried check-in');
    } finally {
      stop.abort();
      await running;
      svc.close();
    }
    const [first, second] = ofMethod(svc, 'checkIn');
    if (first === undefined || second === undefined) throw new Error('two check-ins expected');
    const refused = a.logs.find((l) => l.msg === 'check-in refused, server busy');
    expect(refused?.fields).toMatchObject({ code: 'DEVICE_CHANNEL_BUSY', retry_after_ms: 1200 });
    const wait = refused!.fields.retry_ms as number;
    expect(wait).toBeGreaterThanOrEqual(1200);
    // the wait is the longer of the spread retry-after (1200-1800) and the first failure's back-off (1000-2000)
    expect(wait).toBeLessThanOrEqual(Math.max(1200 * (1 + SCHEDULE.retryAfterJitter), 2 * SCHEDULE.backoffBaseMs));
    expect(second.at - first.at).toBeGreaterThanOrEqual(wait - 20);
    // the refused connection was dropped: the retry came on a new one
    expect(second.peer).not.toBe(first.peer);
    expect(a.logs.filter((l) => l.msg === 'check-in failed')).toEqual([]);
  }, 60_000);
});

describe('check-in schedule', () => {
  it('first check-ins after a start spread over the last interval, reproducibly from the seed', async () => {
    const svc = await scriptedDeviceService(pki, { checkIn: () => ({ ok: checkInAnswer(3600) }) });
    const seeds = [1, 2, 3, 4, 5, 6, 7, 8];
    const agents = await Promise.all(seeds.map((seed) => agent(svc.address, { mode: 'per-check-in', seed, lastIntervalS: 4 })));
    const stop = new AbortController();
    const started = Date.now();
    const running = agents.map((a) => a.runtime.run(stop.signal));
    try {
      await until(() => ofMethod(svc, 'checkIn').length >= seeds.length, 'every first check-in');
    } finally {
      stop.abort();
      await Promise.all(running);
      svc.close();
    }
    const planned = agents.map((a) => a.logs.find((l) => l.msg === 'first check-in')?.fields.in_ms as number);
    // what the seeds give: the first draw of each, over [0, 4 s)
    expect(planned).toEqual(seeds.map((seed) => new CheckInSchedule(seededRandom(seed)).firstMs(4)));
    expect(new Set(planned).size).toBe(seeds.length);
    expect(Math.max(...planned) - Math.min(...planned)).toBeGreaterThan(2000);
    // and the server saw them arrive that spread out, none before its time
    const arrivals = ofMethod(svc, 'checkIn').map((c) => c.at - started);
    expect(Math.max(...arrivals) - Math.min(...arrivals)).toBeGreaterThan(1500);
    expect(Math.min(...arrivals)).toBeGreaterThanOrEqual(Math.min(...planned) - 20);
  }, 60_000);

  it('later check-ins spread 10% either side of the interval; failures back off; retry-after bounds the wait from below', () => {
    const s = new CheckInSchedule(seededRandom(42));
    const waits = Array.from({ length: 2000 }, () => s.nextMs(60));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(54_000);
    expect(Math.max(...waits)).toBeLessThanOrEqual(66_000);
    // spread over the whole range, not bunched: every 1.2 s bucket is hit
    expect(new Set(waits.map((w) => Math.floor((w - 54_000) / 1200))).size).toBe(10);
    expect(new CheckInSchedule(seededRandom(42)).nextMs(60)).toBe(waits[0]);
    expect(new CheckInSchedule(() => 0.5).firstMs(undefined)).toBe(0);
    const busy = { code: status.RESOURCE_EXHAUSTED, metadata: { get: (k: string) => (k === 'retry-after-ms' ? [Buffer.from('30000')] : []) } };
    for (let i = 0; i < 200; i++) {
      const w = s.failureMs(1, busy);
      expect(w.retryAfterMs).toBe(30_000);
      expect(w.waitMs).toBeGreaterThanOrEqual(30_000);
      expect(w.waitMs).toBeLessThanOrEqual(45_000);
    }
    // a malformed value, or one on another status, is not obeyed: plain backoff
    const bad = { code: status.RESOURCE_EXHAUSTED, metadata: { get: () => [Buffer.from('soon')] } };
    const other = { code: status.UNAVAILABLE, metadata: busy.metadata };
    for (const err of [bad, other]) expect(s.failureMs(1, err).retryAfterMs).toBeUndefined();
    expect(s.failureMs(1, bad).waitMs).toBeLessThanOrEqual(2000);
  });
});

describe('enrollment against a busy server', () => {
  const answer = () => ({
    tenantId: TENANT,
    deviceName: 'dev-9',
    certificateDer: Buffer.from(decodePem(pki.deviceCert, 'CERTIFICATE')),
    deviceCaDer: Buffer.from(decodePem(pki.deviceCa, 'CERTIFICATE')),
    serverCaDer: Buffer.from(decodePem(pki.serverCa, 'CERTIFICATE')),
    notAfter: new Date(Date.now() + 86_400_000),
    checkInIntervalS: 60,
  });
  const inventory = { agentVersion: '0.1.0', profile: PROFILE, product: PRODUCT, slots: [], attributes: undefined };
  const busy = { fail: status.RESOURCE_EXHAUSTED, trailers: { 'retry-after-ms': '300', 'svc-error-code': 'DEVICE_CHANNEL_BUSY' } };

  it('waits out RESOURCE_EXHAUSTED with retry-after-ms, each time on a new connection, then enrolls', async () => {
    const svc = await scriptedDeviceService(pki, { enroll: (k) => (k < 2 ? busy : { ok: answer() }) }, false);
    const waits: number[] = [];
    try {
      const id = await enroll({
        address: svc.address,
        bootstrapCaPem: pki.serverCa,
        token: 'svce_test',
        deviceName: 'dev-9',
        inventory,
        random: seededRandom(3),
        onBusy: (ms) => waits.push(ms),
      });
      expect(id).toMatchObject({ tenantId: TENANT, deviceName: 'dev-9' });
    } finally {
      svc.close();
    }
    const calls = ofMethod(svc, 'enroll');
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.peer)).size).toBe(3);
    expect(waits).toHaveLength(2);
    calls.slice(1).forEach((c, i) => {
      expect(waits[i]).toBeGreaterThanOrEqual(300);
      expect(c.at - calls[i]!.at).toBeGreaterThanOrEqual(waits[i]! - 20);
    });
  }, 60_000);

  it('any other refusal fails at once', async () => {
    const svc = await scriptedDeviceService(
      pki,
      { enroll: () => ({ fail: status.UNAUTHENTICATED, trailers: { 'svc-error-code': 'ENROLL_TOKEN_INVALID' } }) },
      false,
    );
    try {
      await expect(enroll({ address: svc.address, bootstrapCaPem: pki.serverCa, token: 'svce_bad', deviceName: 'dev-9', inventory })).rejects.toMatchObject({
        code: status.UNAUTHENTICATED,
      });
    } finally {
      svc.close();
    }
    expect(ofMethod(svc, 'enroll')).toHaveLength(1);
  }, 60_000);
});
