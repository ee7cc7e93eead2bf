import { createHash } from 'node:crypto';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Digest } from '@svc/release-core';
import { FilePlacementDriver, type MemberSpec } from '../src/index.js';
import { tempDir } from './helpers/tools.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir()));
afterEach(() => cleanup());

const digest = (s: string): Digest => `sha256:${createHash('sha256').update(s).digest('hex')}`;

async function member(content: string, extra: Partial<MemberSpec> = {}): Promise<{ m: MemberSpec; file: string }> {
  const file = join(dir, `in-${digest(content).slice(7, 15)}`);
  await writeFile(file, content);
  return { m: { component: 'model-a', kind: 'model', rolloutId: 'r1', target: 't', digest: digest(content), length: content.length, mediaType: 'x', ...extra }, file };
}

describe('file placement driver', () => {
  it('first install: stage changes nothing live, activate places, rollback removes', async () => {
    const d = new FilePlacementDriver({ kind: 'model', dataDir: dir });
    const { m, file } = await member('v1');
    expect(await d.currentDigest(m)).toBeNull();
    await d.stage(m, file);
    expect(await d.currentDigest(m)).toBeNull();
    await d.activate(m);
    expect(await d.currentDigest(m)).toBe(m.digest);
    await d.rollback(m);
    expect(await d.currentDigest(m)).toBeNull();
    await d.rollback(m); // idempotent
    expect(await d.currentDigest(m)).toBeNull();
  });

  it('upgrade keeps the previous version until commit; a retried activation keeps the original', async () => {
    const target = join(dir, 'etc', 'app.conf');
    const d = new FilePlacementDriver({ kind: 'config', dataDir: dir });
    const v1 = await member('one', { placement: target, kind: 'config' });
    await d.stage(v1.m, v1.file);
    await d.activate(v1.m);
    await d.commit(v1.m);
    const v2 = await member('two', { placement: target, kind: 'config' });
    await d.stage(v2.m, v2.file);
    await d.activate(v2.m);
    await d.activate(v2.m); // retried after a crash: previous must still be "one"
    expect(await readFile(target, 'utf8')).toBe('two');
    await d.rollback(v2.m);
    expect(await readFile(target, 'utf8')).toBe('one');
    await d.activate(v2.m);
    await d.commit(v2.m);
    expect(await readFile(target, 'utf8')).toBe('two');
    expect((await readdir(join(dir, 'etc'))).sort()).toEqual(['app.conf']);
  });

  it('refuses a staged file that does not match the signed digest', async () => {
    const d = new FilePlacementDriver({ kind: 'model', dataDir: dir });
    const { m, file } = await member('real');
    await expect(d.stage({ ...m, digest: digest('other') }, file)).rejects.toMatchObject({ code: 'DIGEST_MISMATCH' });
  });

  it('refuses a relative or escaping placement', async () => {
    const d = new FilePlacementDriver({ kind: 'config', dataDir: dir });
    const { m, file } = await member('x', { placement: '../etc/passwd' });
    await expect(d.stage(m, file)).rejects.toMatchObject({ code: 'STAGE_FAILED', field: 'components.model-a.placement' });
  });

  it('service-binary: executable, restart command runs on activate and rollback, a failing restart fails activation', async () => {
    const log = join(dir, 'restarts.log');
    const d = new FilePlacementDriver({ kind: 'service-binary', dataDir: dir, restartCommand: ['sh', '-c', `echo restart {unit} >> ${log}`] });
    const { m, file } = await member('#!/bin/sh\necho hi\n', { kind: 'service-binary', component: 'svcd' });
    await d.stage(m, file);
    await d.activate(m);
    const placed = join(dir, 'placed', 'service-binary', 'svcd');
    expect((await import('node:fs')).statSync(placed).mode & 0o111).not.toBe(0);
    await d.rollback(m);
    expect(await readFile(log, 'utf8')).toBe('restart svcd\nrestart svcd\n');
    const bad = new FilePlacementDriver({ kind: 'service-binary', dataDir: dir, restartCommand: ['sh', '-c', 'echo boom >&2; exit 3'] });
    await bad.stage(m, file);
    await expect(bad.activate(m)).rejects.toMatchObject({ code: 'ACTIVATION_FAILED' });
  });
});
