import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseCertificatePem, verifyReceipt } from '@svc/release-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OsBundleDriver, RaucSlotDriver, type HealthChecker } from '../src/index.js';
import { assignmentFor, makeOrchestrator } from './helpers/agent-fixture.js';
import { startRaucEnv, type RaucEnv } from './helpers/rauc-env.js';
import { MemoryFetcher, TENANT, buildRelease, makeDevice, sha, type DeviceFixture } from './helpers/release-fixture.js';
import { requireTool, tempDir } from './helpers/tools.js';

// Real RAUC 1.8 over a private D-Bus system bus. Root is needed (rauc loop-mounts bundles).
const haveTools = ['rauc', 'dbus-daemon', 'mksquashfs', 'unsquashfs', 'mkfs.ext4', 'openssl'].every((t) =>
  requireTool(t, { mksquashfs: 'squashfs-tools', unsquashfs: 'squashfs-tools', 'mkfs.ext4': 'e2fsprogs', 'dbus-daemon': 'dbus-daemon' }[t] ?? t),
);
const isRoot = process.getuid?.() === 0;
if (haveTools && !isRoot) {
  if (process.env.CI === 'true') throw new Error('rauc tests need root (loop mounts)');
  console.warn('SKIPPING rauc tests: rauc needs root to loop-mount bundles');
}

const healthy: HealthChecker = { check: async () => ({ verdict: 'healthy', results: [{ name: 'boot', ok: true, detail: 'exit 0' }] }) };
const unhealthy: HealthChecker = { check: async () => ({ verdict: 'unhealthy', results: [{ name: 'boot', ok: false, detail: 'exit 1' }] }) };

describe.runIf(haveTools && isRoot).sequential('RAUC A/B slot driver (real rauc)', () => {
  let rauc: RaucEnv;
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let device: DeviceFixture;
  beforeAll(async () => {
    tmp = await tempDir();
    device = await makeDevice(join(tmp.dir, 'pki'));
  });
  afterAll(async () => {
    await rauc?.close();
    await tmp?.cleanup();
  });

  const slots = () => new RaucSlotDriver({ env: rauc.env, keyring: rauc.caPem, rebootCommand: ['true'] });

  it('refuses bundles with the wrong compatible or an untrusted signature', async () => {
    rauc = await startRaucEnv();
    const wrong = await rauc.bundle('wrong', { version: '9.0.0', compatible: 'other-board' });
    const rogue = await rauc.bundle('rogue', { version: '9.0.0', signer: 'rogue' });
    const d = slots();
    await expect(d.install(wrong)).rejects.toThrow(/Compatible mismatch/);
    await expect(d.inspect(rogue)).rejects.toMatchObject({ code: 'ACTIVATION_FAILED' });
    await expect(d.install(rogue)).rejects.toThrow(/signature verification failed/);
    const os = new OsBundleDriver(d);
    const m = {
      component: 'os',
      kind: 'os-bundle' as const,
      rolloutId: 'r',
      target: 'os.raucb',
      digest: sha('x'),
      length: 1,
      mediaType: 'application/vnd.rauc.bundle',
    };
    await expect(os.stage(m, wrong)).rejects.toMatchObject({ code: 'STAGE_FAILED' });
    expect(await d.status()).toEqual({ compatible: 'svc-test', booted: 'A', primary: 'A' });
  });

  it('installs v2 into B, reboots into B, health passes, marks good: receipt OS fields are what rauc did', async () => {
    const bundle = await rauc.bundle('v2', { version: '2.0.0' });
    const bytes = await readFile(bundle);
    const rel = buildRelease({ components: [{ name: 'os', kind: 'os-bundle', content: bytes }], version: '2.0.0' });
    const dataDir = join(tmp.dir, 'agent-ok');
    const stateFile = join(dataDir, 'os-digest');
    const make = (health: HealthChecker) =>
      makeOrchestrator({
        dataDir,
        device,
        drivers: { 'os-bundle': new OsBundleDriver(slots(), { stateFile }) },
        fetcher: new MemoryFetcher(rel.targets),
        trustedKeys: [rel.publicKey],
        health,
      });

    const first = await make(healthy);
    expect(await first.orchestrator.apply(assignmentFor(rel, 'tx-os'))).toEqual({ status: 'rebooting', tx: 'tx-os' });
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', B: 'good' });
    expect(await rauc.reboot()).toBe('B');

    const second = await make(healthy); // the agent starting after the reboot
    const [out] = await second.orchestrator.resume();
    expect(out).toMatchObject({ status: 'done', activation: 'activated', health: 'healthy' });
    if (out?.status !== 'done') throw new Error('unreachable');
    const receipt = verifyReceipt(JSON.parse(await readFile(out.outboxFile, 'utf8')), {
      ca: parseCertificatePem(device.caPem),
      tenant: TENANT,
      device: device.name,
      now: new Date(),
    }).payload;
    const manifest = (await import('node:child_process')).execFileSync('unsquashfs', ['-cat', bundle, 'manifest.raucm']);
    expect(receipt.os).toEqual({
      compatible: 'svc-test',
      bundle_version: '2.0.0',
      manifest_hash: sha(manifest).slice(7),
      previous_slot: 'A',
      installed_slot: 'B',
      booted_slot: 'B',
      bootloader_primary: 'B',
      mark: 'good',
      phase: 'committed',
    });
    expect(receipt).toMatchObject({ activation: 'activated', candidate_digest: sha(bytes), resulting_digest: sha(bytes), previous_digest: null });
    expect(await readFile(stateFile, 'utf8')).toBe(sha(bytes));
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', B: 'good' });
  });

  it('health fails after the reboot: marks the new slot bad, falls back to the previous slot', async () => {
    // now booted B with v2; install v3 into A
    const bundle = await rauc.bundle('v3', { version: '3.0.0' });
    const bytes = await readFile(bundle);
    const rel = buildRelease({ components: [{ name: 'os', kind: 'os-bundle', content: bytes }], version: '3.0.0' });
    const dataDir = join(tmp.dir, 'agent-bad');
    const make = (health: HealthChecker) =>
      makeOrchestrator({
        dataDir,
        device,
        drivers: { 'os-bundle': new OsBundleDriver(slots()) },
        fetcher: new MemoryFetcher(rel.targets),
        trustedKeys: [rel.publicKey],
        health,
      });
    const first = await make(healthy);
    expect(await first.orchestrator.apply(assignmentFor(rel, 'tx-os3'))).toMatchObject({ status: 'rebooting' });
    expect(await rauc.reboot()).toBe('A');
    const second = await make(unhealthy);
    const [out] = await second.orchestrator.resume();
    expect(out).toMatchObject({ status: 'done', activation: 'rolled-back', health: 'unhealthy' });
    if (out?.status !== 'done') throw new Error('unreachable');
    const receipt = verifyReceipt(JSON.parse(await readFile(out.outboxFile, 'utf8')), {
      ca: parseCertificatePem(device.caPem),
      tenant: TENANT,
      device: device.name,
      now: new Date(),
    }).payload;
    expect(receipt.os).toMatchObject({
      bundle_version: '3.0.0',
      previous_slot: 'B',
      installed_slot: 'A',
      booted_slot: 'A',
      bootloader_primary: 'B',
      mark: 'bad',
      phase: 'rolled-back',
    });
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', A: 'bad' });
    // the bootloader now boots the previous slot again
    expect(await rauc.reboot()).toBe('B');
    expect(await slots().status()).toMatchObject({ booted: 'B', primary: 'B' });
  });
});
