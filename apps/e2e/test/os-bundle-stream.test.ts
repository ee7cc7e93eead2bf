import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RaucSlotDriver } from '@svc/agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRaucEnv, type RaucEnv } from '../../agent/test/helpers/rauc-env.js';
import { Fleet, freePort, startHaproxy, waitFor, type Balancer } from '../src/index.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * RAUC streaming against the real server process's bundle port (SVC_DEVICE_BUNDLE_ADDR)
 * through HAProxy in TCP mode, with the enrolled agent's own identity files as RAUC's
 * `[streaming] tls-cert / tls-key / tls-ca` (docs/delta-updates.md "OS bundles: RAUC
 * streaming"). curl (the libcurl RAUC streams with) fetches ranges with exactly those files;
 * the real rauc tries the stream and, where it cannot stream, the RAUC driver installs the full
 * bundle. The server counts what it sent, per device, in the rollout's delivery view.
 */
const TOOLS: Record<string, string> = {
  rauc: 'rauc',
  'dbus-daemon': 'dbus-daemon',
  mksquashfs: 'squashfs-tools',
  unsquashfs: 'squashfs-tools',
  'mkfs.ext4': 'e2fsprogs',
  openssl: 'openssl',
  haproxy: 'haproxy',
  curl: 'curl',
};
const haveTools = Object.entries(TOOLS).every(([tool, pkg]) => requireTool(tool, pkg));
const isRoot = process.getuid?.() === 0;
if (haveTools && !isRoot) {
  if (process.env.CI === 'true') throw new Error('the rauc streaming e2e test needs root (rauc loop-mounts bundles)');
  console.warn('SKIPPING os-bundle streaming e2e: rauc needs root to loop-mount bundles');
}
const DEVICE = 'dev-stream';

interface DeliveryView {
  bundle_streams: { device: string; component: string; bytes_sent: number; requests: number; ranged_requests: number }[];
  bundle_streams_total: number;
}

describe.runIf(haveTools && isRoot)('os-bundle streamed from the bundle port through HAProxy', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let rauc: RaucEnv;
  let fleet: Fleet;
  let proxy: Balancer;
  let identity = '';

  beforeAll(async () => {
    root = await tempDir('e2e-rauc-stream');
    const bundlePort = await freePort();
    fleet = await Fleet.start({ root: root.dir, devices: [DEVICE], server: { env: { SVC_DEVICE_BUNDLE_ADDR: `127.0.0.1:${bundlePort}` } } });
    identity = join(fleet.dataDir(DEVICE), 'identity');
    rauc = await startRaucEnv({
      streaming: { tlsCert: join(identity, 'device.pem'), tlsKey: join(identity, 'device.key'), tlsCa: join(identity, 'server-ca.pem') },
    });
    proxy = await startHaproxy({ dir: root.dir, backends: [`127.0.0.1:${bundlePort}`] });
  });
  afterAll(async () => {
    await proxy?.stop();
    await fleet?.stop();
    await rauc?.close();
    await root?.cleanup();
  });

  it('serves ranges to the agent identity, rauc falls back to the full bundle, the server counts what it sent', async () => {
    const bundle = await rauc.bundle('v2', { version: '2.0.0' });
    const bytes = await readFile(bundle);
    const art = await fleet.api.uploadArtifact({ name: 'rootfs', version: '2.0.0', kind: 'os-bundle', filename: 'rootfs-2.0.0.raucb', bytes });
    // the agent keeps its identity; it is stopped so the assignment stays pending while RAUC streams
    await fleet.agents.get(DEVICE)!.stop();
    const group = await fleet.createGroup('os-stream', [DEVICE]);
    const { release } = await fleet.signAndSubmit({
      version: '2.0.0',
      components: [{ name: 'os', artifact: art }],
      orderedGroups: [['os']],
      group,
      probes: [{ name: 'rauc-up', type: 'command', command: ['rauc', 'status'], timeout_s: 20 }],
    });
    const rollout = await fleet.startRollout(release.id);
    const member = rollout.rollouts?.[0]?.rollout_id ?? rollout.id;
    const url = `https://${proxy.addr}/v1/rollouts/${member}/bundle.raucb`;

    // libcurl with RAUC's [streaming] files: the agent's certificate, key and pinned server CA
    const curl = (args: string[]) =>
      new Promise<{ code: number; out: Buffer; err: string }>((resolve) => {
        execFile(
          'curl',
          ['-sS', '--cacert', join(identity, 'server-ca.pem'), '--cert', join(identity, 'device.pem'), '--key', join(identity, 'device.key'), ...args],
          { encoding: 'buffer' },
          (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr.toString('utf8') }),
        );
      });
    const [from, to] = [1024, Math.min(bytes.length - 1, 3071)];
    const part = await curl(['-r', `${from}-${to}`, url]);
    expect(part.err).toBe('');
    expect(part.out.equals(bytes.subarray(from, to + 1)), part.out.subarray(0, 200).toString('utf8')).toBe(true);
    // without the device certificate the handshake itself is refused
    const anonymous = await new Promise<number>((resolve) =>
      execFile('curl', ['-sS', '--cacert', join(identity, 'server-ca.pem'), url], (err) => resolve(err ? 1 : 0)),
    );
    expect(anonymous).toBe(1);

    const slots = new RaucSlotDriver({ env: rauc.env, conf: rauc.conf, rebootCommand: ['true'] });
    let fullDownloads = 0;
    const result = await slots.installStreaming(url, async () => {
      fullDownloads++;
      return bundle;
    });
    const view = await waitFor(
      'the bundle port count in the delivery view',
      async () => {
        const d = await fleet.api.get<DeliveryView>(`/rollouts/${rollout.id}/delivery`);
        return d.bundle_streams_total === 1 ? d : undefined;
      },
      10_000,
    );
    const streamed = view.bundle_streams[0]!;
    expect(streamed).toMatchObject({ device: DEVICE, component: 'os' });
    if (result.method === 'adaptive') {
      // a RAUC that streams: it read the bundle from the port, a part of it
      expect(fullDownloads).toBe(0);
      expect(streamed.bytes_sent).toBeGreaterThan(to + 1 - from);
    } else {
      // this machine's RAUC cannot stream (docs/delta-updates.md): its error, then the full bundle
      expect(result.streamError).toMatch(/^rauc install failed: LastError: .+/);
      expect(fullDownloads).toBe(1);
      expect(streamed).toMatchObject({ bytes_sent: to + 1 - from, requests: 1, ranged_requests: 1 });
    }
    expect(await slots.status()).toEqual({ compatible: 'svc-test', booted: 'A', primary: 'B' });
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', B: 'good' });
  });
});
