import { createHash } from 'node:crypto';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
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
