import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRaucEnv, type RaucEnv } from '../../agent/test/helpers/rauc-env.js';
import { Fleet, svcRelease, waitFor } from '../src/index.js';
import { sha } from './helpers/digest.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * an `os-bundle` release through REAL rauc across a simulated reboot.
 * The agent's RAUC test environment (private D-Bus, file-backed ext4 slots, custom
 * bootloader backend, `rauc service --override-boot-slot`) is the device's A/B system; the
 * real agent process drives it with SVC_AGENT_OS_BUNDLE=rauc. After install the agent asks
 * for a reboot; the test "reboots" (rauc service restarted on the other slot, agent process
 * restarted), the agent marks the slot good and the server accepts a receipt whose `os`
 * fields are what rauc did.
 */
const TOOLS: Record<string, string> = {
  rauc: 'rauc',
  'dbus-daemon': 'dbus-daemon',
  mksquashfs: 'squashfs-tools',
  unsquashfs: 'squashfs-tools',
  'mkfs.ext4': 'e2fsprogs',
  openssl: 'openssl',
};
const haveTools = Object.entries(TOOLS).every(([tool, pkg]) => requireTool(tool, pkg));
const isRoot = process.getuid?.() === 0;
if (haveTools && !isRoot) {
  if (process.env.CI === 'true') throw new Error('the rauc e2e test needs root (rauc loop-mounts bundles)');
  console.warn('SKIPPING os-bundle e2e: rauc needs root to loop-mount bundles');
}
const DEVICE = 'dev-os';

describe.runIf(haveTools && isRoot)('os-bundle release through real rauc across a reboot', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let rauc: RaucEnv;
  let fleet: Fleet;
  let rebootMarker = '';
  beforeAll(async () => {
    root = await tempDir('e2e-rauc');
    rauc = await startRaucEnv();
    rebootMarker = join(root.dir, 'reboot-requested');
    fleet = await Fleet.start({
      root: root.dir,
      devices: [DEVICE],
      agentEnv: () => ({
        SVC_AGENT_OS_BUNDLE: 'rauc',
        SVC_AGENT_RAUC_CONF: rauc.conf,
        // the device "reboots" by leaving a marker; the test performs the reboot
        SVC_AGENT_REBOOT_COMMAND: JSON.stringify(['/bin/sh', '-c', `echo requested > '${rebootMarker}'`]),
        DBUS_SYSTEM_BUS_ADDRESS: rauc.env.DBUS_SYSTEM_BUS_ADDRESS!,
      }),
    });
  });
  afterAll(async () => {
    await fleet?.stop();
    await rauc?.close();
    await root?.cleanup();
  });

  it('installs into the other slot, reboots into it, marks it good, and the receipt binds the OS result', async () => {
    expect(await rauc.bootState()).toMatchObject({ primary: 'A' });
    const bundle = await rauc.bundle('v2', { version: '2.0.0' });
    const bytes = await readFile(bundle);
    const art = await fleet.api.uploadArtifact({ name: 'rootfs', version: '2.0.0', kind: 'os-bundle', filename: 'rootfs-2.0.0.raucb', bytes });
    expect(art.media_type).toBe('application/vnd.rauc.bundle');
    const group = await fleet.createGroup('os-field', [DEVICE]);
    const { release } = await fleet.signAndSubmit({
      version: '2.0.0',
      components: [{ name: 'os', artifact: art }],
      orderedGroups: [['os']],
      group,
      // after the reboot: the A/B service is up and answering on the booted system
      probes: [{ name: 'rauc-up', type: 'command', command: ['rauc', 'status'], timeout_s: 20 }],
    });
    const txId = (await fleet.startRollout(release.id)).transaction_id!;

    const agent = fleet.agents.get(DEVICE)!;
    await agent.waitForLine(/"msg":"assignment".*"status":"rebooting"/, 90_000);
    await waitFor('the reboot request', () => existsSync(rebootMarker), 10_000);
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', B: 'good' });
    expect((await fleet.api.get<{ state: string }>(`/release-transactions/${txId}`)).state).toBe('running');

    // the reboot: the agent goes down, the bootloader boots B, the agent starts again
    await agent.stop();
    expect(await rauc.reboot()).toBe('B');
    await fleet.startAgent(DEVICE);
    const tx = await fleet.waitSettled(txId, 90_000);
    expect(tx.state).toBe('committed');

    const { index, receipts } = await fleet.exportReceipts(txId);
    expect(index.map((l) => l.device)).toEqual([DEVICE]);
    const file = join(root.dir, 'os.receipt.json');
    await writeFile(file, receipts.get(index[0]!.file as string)!);
    const verified = await svcRelease(['verify-receipt', file, '--ca', fleet.deviceCaFile(DEVICE), '--tenant', fleet.tenant, '--device', DEVICE, '--json']);
    expect(verified.status, verified.stderr).toBe(0);
    const envelope = JSON.parse(await readFile(file, 'utf8')) as { payload: string };
    const payload = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as Record<string, unknown>;
    const manifest = execFileSync('unsquashfs', ['-cat', bundle, 'manifest.raucm']);
    expect(payload).toMatchObject({
      activation: 'activated',
      health: 'healthy',
      candidate_digest: sha(bytes),
      resulting_digest: sha(bytes),
      previous_digest: null,
    });
    expect(payload.os).toEqual({
      compatible: 'svc-test',
      bundle_version: '2.0.0',
      manifest_hash: sha(manifest).slice('sha256:'.length),
      previous_slot: 'A',
      installed_slot: 'B',
      booted_slot: 'B',
      bootloader_primary: 'B',
      mark: 'good',
      phase: 'committed',
    });
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', B: 'good' });
  });
});
