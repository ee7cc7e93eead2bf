import { join } from 'node:path';
import { status, type Server } from '@grpc/grpc-js';
import { decodePem, parsePrivateKeyPem } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { certNotAfter } from '../src/channel/identity.js';
import { AgentRuntime } from '../src/channel/runtime.js';
import { Journal, Orchestrator } from '../src/index.js';
import { MemoryFetcher } from './helpers/release-fixture.js';
import { checkInAnswer, makeChannelPki, scriptedDeviceService, type ChannelPki } from './helpers/mtls-device-service.js';
import { tempDir } from './helpers/tools.js';

/**
 * The check-in loop (AgentRuntime.run) against a real gRPC DeviceService over mTLS whose
 * CheckIn answers are scripted call by call: failures back off exponentially (with jitter),
 * a refusal is logged as an error and backed off the same way, a success resets the count
 * and waits the interval the server asks for.
 */
type Answer = { fail: number } | { interval: number; delayMs?: number };

let root: { dir: string; cleanup: () => Promise<void> };
let pki: ChannelPki;
beforeAll(async () => {
  root = await tempDir();
  pki = await makeChannelPki(root.dir);
});
afterAll(() => root?.cleanup());

async function deviceService(script: Answer[]): Promise<{ server: Server; address: string; calls: number[] }> {
  const svc = await scriptedDeviceService(pki, {
    checkIn: (n) => {
      const answer = script[n] ?? { interval: 3600 };
      return 'fail' in answer
        ? { fail: answer.fail }
        : { ok: checkInAnswer(answer.interval), ...(answer.delayMs === undefined ? {} : { delayMs: answer.delayMs }) };
    },
  });
  return {
    server: svc.server,
    address: svc.address,
    // the check-ins' arrival times so far
    get calls() {
      return svc.calls.filter((c) => c.method === 'checkIn').map((c) => c.at);
    },
  };
}

async function agentRuntime(address: string, dir: string) {
  const dataDir = join(root.dir, dir);
  const logs: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const identity = {
    tenantId: '7d3c2a1e-4b5f-4c6d-8e9f-0a1b2c3d4e5f',
    deviceName: 'dev-1',
    keyPem: pki.deviceKey,
    certPem: pki.deviceCert,
    deviceCaPem: pki.deviceCa,
    serverCaPem: pki.serverCa,
    notAfter: certNotAfter(pki.deviceCert),
  };
  const journal = await Journal.open(join(dataDir, 'journal'));
  const runtime = new AgentRuntime({
    address,
    dataDir,
    identity,
    inventory: {
      next: async () => ({ agentVersion: '0.1.0', profile: 'linux-arm64', product: 'edge', slots: [], attributes: undefined }),
      delivered: () => undefined,
    },
    log: (level, msg, fields = {}) => logs.push({ level, msg, fields }),
    makeOrchestrator: () =>
      new Orchestrator({
        dataDir,
        journal,
        release: null,
        fetcher: new MemoryFetcher(new Map()),
        drivers: {},
        device: { name: 'dev-1', certificateDer: decodePem(pki.deviceCert, 'CERTIFICATE'), key: parsePrivateKeyPem(pki.deviceKey) },
      }),
  });
  return { runtime, logs };
}

describe('check-in loop backoff', () => {
  it('backs off 1-2 s, then 2-4 s; a refusal is an error and backs off too; a success resets the count and waits its interval', async () => {
    const script: Answer[] = [
      { fail: status.UNAVAILABLE },
      { fail: status.UNAVAILABLE },
      { interval: 1 },
      { fail: status.PERMISSION_DENIED },
      { interval: 3600 },
    ];
    const svc = await deviceService(script);
    const { runtime, logs } = await agentRuntime(svc.address, 'agent');
    const stop = new AbortController();
    const running = runtime.run(stop.signal);
    try {
      const deadline = Date.now() + 20_000;
      while (svc.calls.length < script.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(svc.calls).toHaveLength(script.length);
    } finally {
      stop.abort();
      await running;
      svc.server.forceShutdown();
    }
    const failed = logs.filter((l) => l.msg === 'check-in failed');
    expect(failed.map((l) => l.level)).toEqual(['warn', 'warn', 'error']);
    const retry = failed.map((l) => l.fields.retry_ms as number);
    expect(retry[0]).toBeGreaterThanOrEqual(1000);
    expect(retry[0]).toBeLessThanOrEqual(2000);
    expect(retry[1]).toBeGreaterThanOrEqual(2000);
    expect(retry[1]).toBeLessThanOrEqual(4000);
    // the success in between reset the count: back to the first step
    expect(retry[2]).toBeGreaterThanOrEqual(1000);
    expect(retry[2]).toBeLessThanOrEqual(2000);
    // and the loop really waited that long between the calls (interval 1 s after the success,
    // spread by 10% either way)
    const gaps = svc.calls.slice(1).map((t, i) => t - svc.calls[i]!);
    const waited = [retry[0]!, retry[1]!, 900, retry[2]!];
    gaps.forEach((g, i) => {
      expect(g).toBeGreaterThanOrEqual(waited[i]! - 50);
      expect(g).toBeLessThan(waited[i]! + (i === 2 ? 200 : 0) + 1500);
    });
  }, 90_000); // real timers of 8 s, plus mTLS set-up that a loaded 2-core machine stretches

  it('a stop that arrives while a check-in is answered ends the loop at once, not after the interval asked for', async () => {
    // the server answers 400 ms after the stop: the loop must not then start a one-hour wait
    const svc = await deviceService([{ interval: 3600, delayMs: 600 }]);
    const { runtime } = await agentRuntime(svc.address, 'agent-stop');
    const stop = new AbortController();
    const running = runtime.run(stop.signal);
    try {
      const deadline = Date.now() + 20_000;
      while (svc.calls.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(svc.calls).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 200));
      stop.abort();
      const ended = await Promise.race([running.then(() => 'ended'), new Promise((r) => setTimeout(() => r('still running'), 5_000))]);
      expect(ended).toBe('ended');
    } finally {
      stop.abort();
      svc.server.forceShutdown();
    }
  }, 60_000);
});
