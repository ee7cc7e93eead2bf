import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, waitFor, waitForProgress } from '../src/index.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * A container member delivered through a delta (docs/delta-updates.md "Container members") with
 * a real server, a real agent process and real rootful podman: version 1 of an image archive is
 * installed in full, the agent keeps it as a file; version 2 changes one of the image's two
 * layers, the rollout's delta is built from version 1 and the device rebuilds the archive of
 * version 2 through it, loads it and runs it with the signed digest, reporting `delta` and far
 * fewer bytes than the archive.
 */
const root = process.getuid?.() === 0;
if (!root && process.env['CI'] === 'true') throw new Error('the podman container tests run rootful: CI must run them as root');
if (!root) console.warn('SKIPPING: the podman container delta test runs rootful; run it as root');
const ready = root && requireTool('podman') && requireTool('runc') && requireTool('busybox', 'busybox-static') && requireTool('zstd');

const DEVICE = 'dev-c';
const MiB = 1024 * 1024;
// as apps/agent/test/container-podman.test.ts: runc + cgroupfs work on every cgroup layout, no network
const CONTAINERS_CONF = `[containers]
netns = "none"
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`;
// byte-identical tars from identical trees: what makes the unchanged layer the same bytes in both archives
const TAR = ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--format=gnu'];

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

interface DeliveryView {
  deltas: { queued: number; building: number; ready: number; failed: number; skipped: number; items: { state: string; length: number | null }[] };
  deliveries: {
    device: string;
    component: string;
    method: string;
    bytes_transferred: number;
    full_length: number;
    source_digest: string | null;
    fallback: string | null;
  }[];
  deliveries_total: number;
}

describe.skipIf(!ready)('a container member installed through a delta of its image archive (real podman)', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let env: NodeJS.ProcessEnv;

  const podman = (...args: string[]) => {
    const r = spawnSync('podman', args, { env, encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
  };
  const tar = (cwd: string, out: string, entries: string[]) => {
    const r = spawnSync('tar', [...TAR, '-C', cwd, '-cf', out, ...entries], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tar exited ${r.status}: ${r.stderr}`);
  };

  /**
   * A docker-archive of two layers written here: a base layer (static busybox and 3 MiB of
   * random "libraries", the same for every version) and an app layer (`/version` and 256 KiB
   * of random "code", new in each version).
   */
  async function buildArchive(version: string, base: string): Promise<Buffer> {
    const dir = join(tmp.dir, 'images', version);
    const app = join(dir, 'app-root');
    await mkdir(app, { recursive: true });
    await writeFile(join(app, 'version'), `app ${version}\n`);
    await writeFile(join(app, 'app.bin'), randomBytes(256 * 1024));
    const out = join(dir, 'archive');
    await mkdir(out);
    tar(app, join(out, 'app.tar'), ['.']);
    await copyFile(base, join(out, 'base.tar'));
    const layers = [await readFile(join(out, 'base.tar')), await readFile(join(out, 'app.tar'))].map(sha256);
    const names = layers.map((h) => `${h}.tar`);
    await copyFile(join(out, 'base.tar'), join(out, names[0]!));
    await copyFile(join(out, 'app.tar'), join(out, names[1]!));
    const config = Buffer.from(
      JSON.stringify({
        architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
        os: 'linux',
        // stops at once on SIGTERM (a shell as PID 1 has no default handler)
        config: { Cmd: ['/bin/sh', '-c', "trap 'exit 0' TERM; while :; do sleep 1; done"] },
        rootfs: { type: 'layers', diff_ids: layers.map((h) => `sha256:${h}`) },
      }),
    );
    const configName = `${sha256(config)}.json`;
    await writeFile(join(out, configName), config);
    await writeFile(join(out, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [`localhost/app:${version}`], Layers: names }]));
    const file = join(dir, 'app.docker-archive.tar');
    tar(out, file, ['manifest.json', configName, ...names]);
    return readFile(file);
  }

  beforeAll(async () => {
    tmp = await tempDir('e2e-container-delta');
    await writeFile(join(tmp.dir, 'containers.conf'), CONTAINERS_CONF);
    await writeFile(
      join(tmp.dir, 'storage.conf'),
      `[storage]\ndriver = "overlay"\ngraphroot = "${join(tmp.dir, 'storage')}"\nrunroot = "${join(tmp.dir, 'run')}"\n`,
    );
    env = { ...process.env, CONTAINERS_CONF: join(tmp.dir, 'containers.conf'), CONTAINERS_STORAGE_CONF: join(tmp.dir, 'storage.conf') };
    fleet = await Fleet.start({
      root: tmp.dir,
      devices: [DEVICE],
      agentEnv: () => ({ SVC_AGENT_CONTAINER_RUNTIME: 'podman', CONTAINERS_CONF: env.CONTAINERS_CONF, CONTAINERS_STORAGE_CONF: env.CONTAINERS_STORAGE_CONF }),
    });
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    if (env !== undefined) {
      podman('rm', '--all', '--force', '--time', '0');
      podman('rmi', '--all', '--force');
    }
    await tmp?.cleanup();
  });

  it('installs version 1 in full, version 2 through the delta of the kept archive, and runs version 2 with its signed digest', async () => {
    // the base layer, once: static busybox with its applets and 3 MiB of libraries
    const baseRoot = join(tmp.dir, 'images', 'base-root');
    await mkdir(join(baseRoot, 'bin'), { recursive: true });
    await mkdir(join(baseRoot, 'lib'));
    await copyFile(spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim(), join(baseRoot, 'bin', 'busybox'));
    for (const applet of ['sh', 'sleep', 'cat']) await symlink('busybox', join(baseRoot, 'bin', applet));
    await writeFile(join(baseRoot, 'lib', 'libs.so'), randomBytes(3 * MiB));
    const base = join(tmp.dir, 'images', 'base.tar');
    tar(baseRoot, base, ['.']);
    const v1 = await buildArchive('v1', base);
    const v2 = await buildArchive('v2', base);

    const upload = (version: string, bytes: Buffer) =>
      fleet.api.uploadArtifact({
        name: 'app',
        version,
        kind: 'container',
        filename: 'app.docker-archive.tar',
        mediaType: 'application/x-docker-archive',
        bytes,
      });
    const a1 = await upload('1.0.0', v1);
    const group = await fleet.createGroup('field', [DEVICE]);
    const probes = [{ name: 'app-running', type: 'command' as const, command: ['podman', 'exec', 'svc-app', 'cat', '/version'], timeout_s: 30 }];

    // version 1: nothing kept before, so a full download
    const r1 = await fleet.signAndSubmit({ version: '1.0.0', components: [{ name: 'app', artifact: a1 }], orderedGroups: [['app']], group, probes });
    const ro1 = await fleet.startRollout(r1.release.id);
    expect(await fleet.waitSettled(ro1.transaction_id!, 120_000)).toMatchObject({ state: 'committed' });
    const first = await waitFor('the first delivery report', async () => {
      const d = await fleet.api.get<DeliveryView>(`/rollouts/${ro1.id}/delivery`);
      return d.deliveries_total === 1 ? d : undefined;
    });
    expect(first.deliveries.map((d) => [d.method, d.bytes_transferred])).toEqual([['full', v1.length]]);
    const kept = join(fleet.dataDir(DEVICE), 'kept', 'container', 'app.tar');
    expect((await readFile(kept)).equals(v1)).toBe(true);

    // version 2: the one wave waits until the delta from version 1 is built
    const a2 = await upload('2.0.0', v2);
    const r2 = await fleet.signAndSubmit({
      version: '2.0.0',
      components: [{ name: 'app', artifact: a2 }],
      orderedGroups: [['app']],
      group,
      probes,
      waves: [{ count: 1, requires_approval: true }],
    });
    const ro2 = await fleet.startRollout(r2.release.id);
    const built = await waitForProgress<DeliveryView>('the delta to be built', async () => {
      const d = await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`);
      return d.deltas.queued + d.deltas.building === 0 ? { done: d } : { progress: d.deltas };
    });
    expect(built.deltas).toMatchObject({ ready: 1, failed: 0, skipped: 0 });
    const deltaLength = built.deltas.items[0]!.length!;
    console.log(`container archive ${v2.length} bytes, delta ${deltaLength} bytes (${((100 * deltaLength) / v2.length).toFixed(1)}%)`);
    // about the changed layer (256 KiB of random bytes), not the archive
    expect(deltaLength).toBeLessThan(v2.length / 10);

    await fleet.api.json('POST', `/rollouts/${ro2.id}/approve`, undefined, 200);
    expect(await fleet.waitSettled(ro2.transaction_id!, 120_000)).toMatchObject({ state: 'committed' });
    const delivered = await waitFor('the delta delivery report', async () => (await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`)).deliveries[0]);
    expect(delivered).toMatchObject({
      device: DEVICE,
      component: 'app',
      method: 'delta',
      bytes_transferred: deltaLength,
      full_length: v2.length,
      source_digest: a1.digest,
      fallback: null,
    });

    // the runtime runs version 2, labelled with the signed digest, from the image the archive loaded
    const label = podman('inspect', '--type', 'container', '--format', '{{index .Config.Labels "svc.digest"}}', 'svc-app');
    expect(label.out).toBe(a2.digest);
    expect(podman('inspect', '--type', 'container', '--format', '{{.State.Status}}', 'svc-app').out).toBe('running');
    expect(podman('exec', 'svc-app', 'cat', '/version').out).toBe('app v2');
    expect(podman('image', 'exists', `svc/app:${a2.digest.slice('sha256:'.length)}`).code).toBe(0);
    expect(podman('inspect', '--type', 'container', 'svc-app-prev').code).not.toBe(0);
    // the kept archive is now version 2's, the only one
    expect((await readFile(kept)).equals(v2)).toBe(true);
    expect(spawnSync('ls', [join(fleet.dataDir(DEVICE), 'kept', 'container')], { encoding: 'utf8' }).stdout.trim()).toBe('app.tar');
  }, 300_000);
});
