import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OsBundleDriver, type HealthChecker } from '../src/index.js';
import { FakeSlotDriver } from './helpers/fake-slot-driver.js';
import { assignmentFor, makeOrchestrator } from './helpers/agent-fixture.js';
import { MemoryFetcher, buildRelease, makeDevice, type DeviceFixture } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

// Fast os-bundle state-machine tests on the faithful fake slot driver (the real RAUC runs in rauc.test.ts).
let root: { dir: string; cleanup: () => Promise<void> };
let device: DeviceFixture;
beforeAll(async () => {
  root = await tempDir();
  device = await makeDevice(join(root.dir, 'pki'));
});
afterAll(() => root.cleanup());

const ok: HealthChecker = { check: async () => ({ verdict: 'healthy', results: [{ name: 'b', ok: true, detail: 'exit 0' }] }) };
const bundle = (compatible: string, signed = true) => JSON.stringify({ compatible, version: '5.0.0', signed });

async function setup(name: string, content: string) {
  const slots = new FakeSlotDriver('svc-test');
  const rel = buildRelease({ components: [{ name: 'os', kind: 'os-bundle', content }] });
  const dataDir = join(root.dir, name);
  const make = () =>
    makeOrchestrator({
      dataDir,
      device,
      drivers: { 'os-bundle': new OsBundleDriver(slots) },
      fetcher: new MemoryFetcher(rel.targets),
      trustedKeys: [rel.publicKey],
      health: ok,
    });
  return { slots, rel, make };
}

describe('os-bundle through the fake slot driver', () => {
  it('the bootloader fell back on its own (new slot never came up): rolled back, receipt says so', async () => {
    const s = await setup('fellback', bundle('svc-test'));
    expect(await (await s.make()).orchestrator.apply(assignmentFor(s.rel))).toMatchObject({ status: 'rebooting' });
    expect(s.slots.primary).toBe('B');
    s.slots.state.B = 'bad'; // e.g. the kernel panicked and the bootloader burned its attempts
    s.slots.boot();
    expect(s.slots.booted).toBe('A');
    const [out] = await (await s.make()).orchestrator.resume();
    expect(out).toMatchObject({ status: 'done', activation: 'rolled-back' });
    if (out?.status !== 'done') throw new Error('unreachable');
    const receipt = JSON.parse(Buffer.from(JSON.parse(await readFile(out.outboxFile, 'utf8')).payload, 'base64').toString('utf8'));
    expect(receipt.os).toMatchObject({ previous_slot: 'A', installed_slot: 'B', booted_slot: 'A', bootloader_primary: 'A', mark: 'bad', phase: 'rolled-back' });
  });

  it('an unsigned or incompatible bundle never reaches install', async () => {
    for (const [name, content] of [
      ['unsigned', bundle('svc-test', false)],
      ['incompatible', bundle('other')],
    ] as const) {
      const s = await setup(name, content);
      const out = await (await s.make()).orchestrator.apply(assignmentFor(s.rel));
      expect(out).toMatchObject({ status: 'done', activation: 'failed' });
      expect(s.slots.calls).not.toContain('install');
      expect(s.slots.primary).toBe('A');
    }
  });
});
