import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContainerDriver, containerRuntimeCli, type MemberSpec } from '../src/index.js';
import { requireTool, tempDir } from './helpers/tools.js';

/**
 * The container driver against real podman (rootful, runc): images built here from a static
 * busybox, saved as the docker-archive files a release ships, loaded, run, swapped, rolled back
 * and committed by the driver exactly as the agent does it. No network: `netns = "none"`.
 */
const root = process.getuid?.() === 0;
if (!root && process.env['CI'] === 'true') throw new Error('the podman container tests run rootful: CI must run them as root');
if (!root) console.warn('SKIPPING: the podman container tests run rootful; run them as root');
const ready = root && requireTool('podman') && requireTool('runc') && requireTool('busybox', 'busybox-static');

// Bounded for this sandbox and any host: cgroupfs + runc work on cgroup v1, hybrid and v2
// (crun refuses hybrid); ulimits no higher than an unprivileged hard limit.
const CONTAINERS_CONF = `[containers]
netns = "none"
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`;

describe.skipIf(!ready)('container driver with real podman', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let env: NodeJS.ProcessEnv;
  const images = new Map<string, { file: string; member: MemberSpec }>();

  const podman = (...args: string[]) => {
    const r = spawnSync('podman', args, { env, encoding: 'utf8', timeout: 120_000 });
    return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
  };
  const must = (...args: string[]) => {
    const r = podman(...args);
    if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}: ${r.err}`);
    return r.out;
  };
  const versionIn = (container: string) => must('exec', container, 'cat', '/version');
  const state = (container: string) => {
    const r = podman('inspect', '--type', 'container', '--format', '{{.State.Status}}', container);
    return r.code === 0 ? r.out : 'absent';
  };

  /** A rootfs (static busybox + /version) imported, saved as a docker-archive, then removed from storage. */
  async function buildImage(component: string, version: string, cmd: string[]): Promise<void> {
    const rootfs = join(dir, 'build', `${component}-${version}`);
    await mkdir(join(rootfs, 'bin'), { recursive: true });
    await copyFile(spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim(), join(rootfs, 'bin', 'busybox'));
    for (const applet of ['sh', 'sleep', 'cat']) await symlink('busybox', join(rootfs, 'bin', applet));
    await writeFile(join(rootfs, 'version'), `${component} ${version}\n`);
    const tar = `${rootfs}.rootfs.tar`;
    const t = spawnSync('tar', ['-C', rootfs, '-cf', tar, '.']);
    if (t.status !== 0) throw new Error(`tar exited ${t.status}`);
    const ref = `localhost/build/${component}:${version}`;
    must('import', '--change', `CMD ${JSON.stringify(cmd)}`, tar, ref);
    const file = join(dir, `${component}-${version}.docker-archive.tar`);
    must('save', '--format', 'docker-archive', '--output', file, ref);
    must('rmi', ref);
    const bytes = await readFile(file);
    const member: MemberSpec = {
      component,
      kind: 'container',
      rolloutId: `r-${version}`,
      target: `${component}-${version}.tar`,
      digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
      length: bytes.length,
      mediaType: 'application/x-docker-archive',
    };
    images.set(`${component}:${version}`, { file, member });
  }

  beforeAll(async () => {
    ({ dir, cleanup } = await tempDir());
    await writeFile(join(dir, 'containers.conf'), CONTAINERS_CONF);
    await writeFile(join(dir, 'storage.conf'), `[storage]\ndriver = "overlay"\ngraphroot = "${join(dir, 'storage')}"\nrunroot = "${join(dir, 'run')}"\n`);
    env = { ...process.env, CONTAINERS_CONF: join(dir, 'containers.conf'), CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf') };
    // stops at once on SIGTERM (a shell as PID 1 has no default handler)
    const serve = ['/bin/sh', '-c', "trap 'exit 0' TERM; while :; do sleep 1; done"];
    await buildImage('app', 'v1', serve);
    await buildImage('app', 'v2', serve);
    await buildImage('app', 'v3-broken', ['/bin/does-not-exist']);
    await buildImage('side', 'v1', serve);
  }, 300_000);

  afterAll(async () => {
    if (env !== undefined) {
      podman('rm', '--all', '--force', '--time', '0');
      podman('rmi', '--all', '--force');
    }
    await cleanup?.();
  });

  const img = (key: string) => images.get(key)!;

  it('installs, swaps keeping the previous stopped, rolls back, retries and commits; the live image archive is kept', async () => {
    const archiveDir = join(dir, 'kept');
    const driver = new ContainerDriver({ runtime: containerRuntimeCli('podman'), env, timeoutMs: 120_000, archiveDir });
    const kept = async () => readFile(join(archiveDir, 'app.tar'));
    const v1 = img('app:v1');
    const v2 = img('app:v2');
    expect(await driver.currentDigest(v1.member)).toBeNull();

    const staged = await driver.stage(v1.member, v1.file);
    expect(staged).toEqual({ image: `svc/app:${v1.member.digest.slice(7)}` });
    expect(must('image', 'exists', `svc/app:${v1.member.digest.slice(7)}`)).toBe('');
    await driver.activate(v1.member);
    await driver.commit(v1.member);
    expect(await driver.currentDigest(v1.member)).toBe(v1.member.digest);
    expect(versionIn('svc-app')).toBe('app v1');
    expect(state('svc-app')).toBe('running');
    expect((await kept()).equals(await readFile(v1.file))).toBe(true);
    expect(await driver.deltaSource(v2.member)).toBe(join(archiveDir, 'app.tar'));

    await driver.stage(v2.member, v2.file);
    await driver.activate(v2.member);
    expect(versionIn('svc-app')).toBe('app v2');
    expect(state('svc-app-prev')).toBe('exited');
    expect(await driver.currentDigest(v2.member)).toBe(v2.member.digest);

    await driver.rollback(v2.member);
    expect(versionIn('svc-app')).toBe('app v1');
    expect(state('svc-app')).toBe('running');
    expect(state('svc-app-prev')).toBe('absent');
    await driver.rollback(v2.member); // idempotent
    expect(await driver.currentDigest(v1.member)).toBe(v1.member.digest);
    expect((await kept()).equals(await readFile(v1.file))).toBe(true);

    // an activation retried after a crash: the live container is ours, the kept one stays v1
    await driver.activate(v2.member);
    await driver.activate(v2.member);
    expect(versionIn('svc-app')).toBe('app v2');
    expect(must('inspect', '--type', 'container', '--format', '{{index .Config.Labels "svc.digest"}}', 'svc-app-prev')).toBe(v1.member.digest);
    await driver.commit(v2.member);
    expect(state('svc-app-prev')).toBe('absent');
    expect(versionIn('svc-app')).toBe('app v2');
    expect(await driver.currentDigest(v2.member)).toBe(v2.member.digest);
    expect((await kept()).equals(await readFile(v2.file))).toBe(true);
    expect(await readdir(archiveDir)).toEqual(['app.tar']);
  });

  it('a container that cannot start is ACTIVATION_FAILED and rollback brings the previous one back', async () => {
    const driver = new ContainerDriver({ runtime: containerRuntimeCli('podman'), env, timeoutMs: 120_000 });
    const before = (await driver.currentDigest(img('app:v2').member))!;
    const broken = img('app:v3-broken');
    await driver.stage(broken.member, broken.file);
    const err = await driver.activate(broken.member).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'ACTIVATION_FAILED' });
    expect((err as Error).message).toMatch(/^podman run exited \d+: .*does-not-exist/s);
    await driver.rollback(broken.member);
    expect(await driver.currentDigest(broken.member)).toBe(before);
    expect(versionIn('svc-app')).toBe('app v2');
    expect(state('svc-app-prev')).toBe('absent');
  });

  it('rolling back a first install removes the container', async () => {
    const driver = new ContainerDriver({ runtime: containerRuntimeCli('podman'), env, timeoutMs: 120_000 });
    const side = img('side:v1');
    await driver.stage(side.member, side.file);
    await driver.activate(side.member);
    expect(versionIn('svc-side')).toBe('side v1');
    await driver.rollback(side.member);
    expect(state('svc-side')).toBe('absent');
    expect(await driver.currentDigest(side.member)).toBeNull();
  });
});
