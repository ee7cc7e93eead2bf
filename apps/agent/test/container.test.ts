import { createHash } from 'node:crypto';
import { link, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ContainerDriver, containerRuntimeCli, parseLoadedImage, type MemberSpec } from '../src/index.js';
import { installFakeRuntime } from './helpers/fake-runtime.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

const hex = (s: string) => createHash('sha256').update(s).digest('hex');
const spec = (v: string): MemberSpec => ({
  component: 'web',
  kind: 'container',
  rolloutId: 'r',
  target: 't',
  digest: `sha256:${hex(v)}`,
  length: 1,
  mediaType: 'application/vnd.oci.image.layer.v1.tar',
});

// The real contract is container-podman.test.ts (real podman); these pin the docker spelling
// and load outputs that no runtime here prints, and the fake below injects failures.
describe('container runtime command lines', () => {
  it('builds docker and podman argv', () => {
    const d = containerRuntimeCli('docker');
    expect(d.load('/s/img.tar')).toEqual(['docker', 'load', '--input', '/s/img.tar']);
    expect(d.run('svc-web', 'svc/web:ab', 'sha256:ab')).toEqual([
      'docker',
      'run',
      '--detach',
      '--name',
      'svc-web',
      '--restart',
      'unless-stopped',
      '--label',
      'svc.digest=sha256:ab',
      'svc/web:ab',
    ]);
    expect(d.remove('svc-web-prev')).toEqual(['docker', 'rm', '--force', 'svc-web-prev']);
    expect(containerRuntimeCli('podman').rename('a', 'b')).toEqual(['podman', 'rename', 'a', 'b']);
    expect(containerRuntimeCli('podman', '/usr/bin/podman').inspectDigest('c')[0]).toBe('/usr/bin/podman');
  });

  it('parses what docker and podman print after load', () => {
    expect(parseLoadedImage('Loaded image: example/app:1.0\n')).toBe('example/app:1.0');
    expect(parseLoadedImage('Loaded image ID: sha256:0123\n')).toBe('sha256:0123');
    expect(parseLoadedImage('Getting image source signatures\nLoaded image(s): localhost/app:1\n')).toBe('localhost/app:1');
    expect(parseLoadedImage('nothing\n')).toBeNull();
  });
});

describe('container driver with a fake runtime script on PATH', () => {
  async function setup() {
    const bin = join(dir, 'bin');
    await mkdir(bin);
    const fake = await installFakeRuntime(bin);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    const archive = join(dir, 'img.tar');
    await writeFile(archive, 'tar');
    const argvs = async () =>
      (await readFile(fake.log, 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as string[]);
    return { env, archive, argvs, driver: new ContainerDriver({ env }) };
  }

  it('stage loads and tags; activate swaps containers keeping the previous; commit removes it', async () => {
    const { driver, archive, argvs } = await setup();
    const v1 = spec('v1');
    await driver.stage(v1, archive);
    await driver.activate(v1);
    await driver.commit(v1);
    expect(await driver.currentDigest(v1)).toBe(v1.digest);
    const v2 = spec('v2');
    await driver.stage(v2, archive);
    await driver.activate(v2);
    expect(await driver.currentDigest(v2)).toBe(v2.digest);
    await driver.commit(v2);
    const calls = (await argvs()).filter((a) => a[0] !== 'inspect').map((a) => a.slice(0, 2).join(' '));
    expect(calls).toEqual([
      'load --input',
      'tag example/app:loaded',
      'run --detach',
      'rm --force',
      'load --input',
      'tag example/app:loaded',
      'stop svc-web',
      'rename svc-web',
      'run --detach',
      'rm --force',
    ]);
    expect((await argvs()).find((a) => a[0] === 'tag')).toEqual(['tag', 'example/app:loaded', `svc/web:${hex('v1')}`]);
  });

  it('rollback restores and restarts the previous container; a failed run is ACTIVATION_FAILED', async () => {
    const { env, archive } = await setup();
    const ok = new ContainerDriver({ env });
    const v1 = spec('v1');
    await ok.stage(v1, archive);
    await ok.activate(v1);
    await ok.commit(v1);
    const failing = new ContainerDriver({ env: { ...env, FAKE_RUNTIME_FAIL_RUN: 'svc-web' } });
    const v2 = spec('v2');
    await failing.stage(v2, archive);
    await expect(failing.activate(v2)).rejects.toMatchObject({ code: 'ACTIVATION_FAILED' });
    await ok.rollback(v2);
    expect(await ok.currentDigest(v1)).toBe(v1.digest);
    await ok.rollback(v2); // idempotent
    expect(await ok.currentDigest(v1)).toBe(v1.digest);
  });
});

/**
 * The kept image archive (docs/delta-updates.md "Container members"): the archive of the live
 * image, kept as a file for the next delta, moves with the containers. Every row interrupts the
 * driver where an agent can die and runs what the recovery table does after a restart, with a
 * new driver object (nothing in memory survives), then checks the one archive left.
 */
describe('container driver: the kept image archive', () => {
  async function setup() {
    const bin = join(dir, 'bin');
    await mkdir(bin);
    await installFakeRuntime(bin);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    const archiveDir = join(dir, 'kept');
    const staging = join(dir, 'staging');
    await mkdir(staging);
    const archive = async (v: string) => {
      const file = join(staging, `${v}.staged`);
      await writeFile(file, `archive ${v}`);
      return file;
    };
    const driver = (extra: Record<string, string> = {}) => new ContainerDriver({ env: { ...env, ...extra }, archiveDir });
    const kept = join(archiveDir, 'web.tar');
    const left = async () => (await readdir(archiveDir)).sort();
    const keptVersion = async () => (await readFile(kept, 'utf8').catch(() => null))?.replace('archive ', '') ?? null;
    // v1 installed and committed: its archive is the one kept
    const v1 = spec('v1');
    const d = driver();
    await d.stage(v1, await archive('v1'));
    await d.activate(v1);
    await d.commit(v1);
    return { env, archive, driver, kept, left, keptVersion, v1, v2: spec('v2') };
  }

  it('commit keeps the new archive and drops the previous one; the kept archive is the delta source', async () => {
    const { archive, driver, kept, left, keptVersion, v1, v2 } = await setup();
    expect(await left()).toEqual(['web.tar']);
    expect(await keptVersion()).toBe('v1');
    expect(await driver().deltaSource(v2)).toBe(kept);
    const d = driver();
    await d.stage(v2, await archive('v2'));
    // staged beside it; the kept one is still the live image's until activation
    expect(await left()).toEqual(['web.tar', 'web.tar.svc-new']);
    expect(await keptVersion()).toBe('v1');
    await d.activate(v2);
    expect(await left()).toEqual(['web.tar', 'web.tar.svc-new', 'web.tar.svc-prev']);
    expect(await keptVersion()).toBe('v2');
    await d.commit(v2);
    await d.commit(v2); // idempotent
    expect(await left()).toEqual(['web.tar']);
    expect(await keptVersion()).toBe('v2');
    expect(await d.currentDigest(v1)).toBe(v2.digest);
    // without an archive dir nothing is kept and there is no source
    expect(await new ContainerDriver({}).deltaSource(v2)).toBeNull();
  });

  type Recovery = 'rollback' | 'rollback-then-retry' | 'finish-commit';
  const rows: { name: string; interrupt: (s: Awaited<ReturnType<typeof setup>>) => Promise<void>; recovery: Recovery; live: 'v1' | 'v2' }[] = [
    {
      name: 'the container failed to start: rolled back, the previous archive restored',
      interrupt: async ({ archive, driver, v2 }) => {
        const d = driver({ FAKE_RUNTIME_FAIL_RUN: 'svc-web' });
        await d.stage(v2, await archive('v2'));
        await expect(d.activate(v2)).rejects.toMatchObject({ code: 'ACTIVATION_FAILED' });
      },
      recovery: 'rollback',
      live: 'v1',
    },
    {
      name: 'killed between the archive link and its rename (mid-driver-write): rolled back, then activated again and committed',
      interrupt: async ({ archive, driver, kept, v2 }) => {
        await driver().stage(v2, await archive('v2'));
        // what activation had done when it died: the previous kept, the new linked beside A
        await link(kept, `${kept}.svc-prev`);
        await link(`${kept}.svc-new`, `${kept}.svc-tmp`);
      },
      recovery: 'rollback-then-retry',
      live: 'v2',
    },
    {
      name: 'killed after activation (mid-activation): rolled back, then activated again and committed',
      interrupt: async ({ archive, driver, v2 }) => {
        const d = driver();
        await d.stage(v2, await archive('v2'));
        await d.activate(v2);
      },
      recovery: 'rollback-then-retry',
      live: 'v2',
    },
    {
      name: 'killed in a retried activation (activated twice): the kept previous is still v1',
      interrupt: async ({ archive, driver, v2 }) => {
        const d = driver();
        await d.stage(v2, await archive('v2'));
        await d.activate(v2);
        await d.activate(v2);
      },
      recovery: 'rollback',
      live: 'v1',
    },
    {
      name: 'killed mid-commit (the previous container gone, the previous archive not yet): the commit finished',
      interrupt: async ({ archive, driver, env, v2 }) => {
        const d = driver();
        await d.stage(v2, await archive('v2'));
        await d.activate(v2);
        // the runtime half of commit only
        await new ContainerDriver({ env }).commit(v2);
      },
      recovery: 'finish-commit',
      live: 'v2',
    },
  ];

  it.each(rows)('$name', async ({ interrupt, recovery, live }) => {
    const s = await setup();
    await interrupt(s);
    const d = s.driver(); // the restarted agent's driver
    if (recovery === 'rollback' || recovery === 'rollback-then-retry') {
      await d.rollback(s.v2);
      await d.rollback(s.v2); // idempotent
      expect(await d.currentDigest(s.v2)).toBe(s.v1.digest);
      expect(await s.keptVersion()).toBe('v1');
      // the staged archive stays for an activation retried from `staged`
      expect(await s.left()).toEqual(['web.tar', 'web.tar.svc-new']);
    }
    if (recovery === 'rollback-then-retry') await d.activate(s.v2);
    if (recovery !== 'rollback') await d.commit(s.v2);
    const want = live === 'v2' ? s.v2 : s.v1;
    expect(await d.currentDigest(want)).toBe(want.digest);
    expect(await s.keptVersion()).toBe(live);
    if (recovery !== 'rollback') expect(await s.left()).toEqual(['web.tar']);
    // the next transaction replaces a leftover staged archive and commits down to one
    const v3 = spec('v3');
    await d.stage(v3, await s.archive('v3'));
    await d.activate(v3);
    await d.commit(v3);
    expect(await s.left()).toEqual(['web.tar']);
    expect(await s.keptVersion()).toBe('v3');
  });

  it('a first install rolled back leaves no archive; activation without a staged archive keeps none', async () => {
    const bin = join(dir, 'bin');
    await mkdir(bin);
    await installFakeRuntime(bin);
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    const archiveDir = join(dir, 'kept');
    const d = new ContainerDriver({ env, archiveDir });
    const v1 = spec('v1');
    const file = join(dir, 'v1.staged');
    await writeFile(file, 'archive v1');
    await d.stage(v1, file);
    await d.activate(v1);
    expect(await readdir(archiveDir)).toEqual(['web.tar', 'web.tar.svc-new', 'web.tar.svc-none']);
    await d.rollback(v1);
    expect(await readdir(archiveDir)).toEqual(['web.tar.svc-new']);
    expect(await d.deltaSource(v1)).toBeNull();
    // an image staged by a driver that kept no archive: a stale one is not left as the source
    await d.activate(v1);
    await d.commit(v1);
    await new ContainerDriver({ env }).stage(spec('v2'), file);
    await d.activate(spec('v2'));
    await d.commit(spec('v2'));
    expect(await readdir(archiveDir)).toEqual([]);
    expect(await d.deltaSource(spec('v2'))).toBeNull();
  });
});
