import { createHash } from 'node:crypto';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
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
  return {
    m: { component: 'model-a', kind: 'model', rolloutId: 'r1', target: 't', digest: digest(content), length: content.length, mediaType: 'x', ...extra },
    file,
  };
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

/** The current user's name and a group other than its primary one that it may give files to. */
async function accounts(): Promise<{ user: string; primary: { name: string; gid: number }; second: { name: string; gid: number } | undefined }> {
  const uid = process.getuid!();
  const gid = process.getgid!();
  const passwd = (await readFile('/etc/passwd', 'utf8')).split('\n').map((l) => l.split(':'));
  const groups = (await readFile('/etc/group', 'utf8'))
    .split('\n')
    .map((l) => l.split(':'))
    .filter((f) => f.length >= 3)
    .map((f) => ({ name: f[0]!, gid: Number(f[2]) }));
  const user = passwd.find((f) => Number(f[2]) === uid)![0]!;
  const primary = groups.find((g) => g.gid === gid)!;
  // root may give a file to any group; anyone else only to a group they are in
  const allowed = uid === 0 ? groups : groups.filter((g) => process.getgroups!().includes(g.gid));
  return { user, primary, second: allowed.find((g) => g.gid !== gid) };
}

describe('file placement: signed mode, owner and group on real files', () => {
  it('applies them to the placed file; an upgrade changes them; rollback brings the old ones back', async () => {
    const { user, primary, second } = await accounts();
    if (second === undefined) console.warn('SKIPPING the second-group half: the current user is in one group only');
    const target = join(dir, 'etc', 'svc', 'app.conf');
    const d = new FilePlacementDriver({ kind: 'config', dataDir: dir });
    const v1 = await member('one', { kind: 'config', placement: target, access: { mode: '0640', owner: user, group: (second ?? primary).name } });
    await d.stage(v1.m, v1.file);
    await d.activate(v1.m);
    await d.commit(v1.m);
    let st = await stat(target);
    expect(st.mode & 0o7777).toBe(0o640);
    expect(st.uid).toBe(process.getuid!());
    expect(st.gid).toBe((second ?? primary).gid);

    const v2 = await member('two', { kind: 'config', placement: target, access: { mode: '600', group: primary.name } });
    await d.stage(v2.m, v2.file);
    // staged with its own access, the live file untouched
    expect((await stat(target)).mode & 0o7777).toBe(0o640);
    expect((await stat(`${target}.svc-new`)).mode & 0o7777).toBe(0o600);
    await d.activate(v2.m);
    st = await stat(target);
    expect(await readFile(target, 'utf8')).toBe('two');
    expect(st.mode & 0o7777).toBe(0o600);
    expect(st.gid).toBe(primary.gid);
    await d.rollback(v2.m);
    st = await stat(target);
    expect(await readFile(target, 'utf8')).toBe('one');
    expect(st.mode & 0o7777).toBe(0o640);
    expect(st.gid).toBe((second ?? primary).gid);
  });

  it('without a signed mode: 0644 for files, 0755 for a service binary', async () => {
    const model = await member('m');
    const dm = new FilePlacementDriver({ kind: 'model', dataDir: dir });
    await dm.stage(model.m, model.file);
    await dm.activate(model.m);
    expect((await stat(dm.pathOf(model.m))).mode & 0o7777).toBe(0o644);
    const bin = await member('#!/bin/sh\n', { kind: 'service-binary', component: 'svcd' });
    const db = new FilePlacementDriver({ kind: 'service-binary', dataDir: dir, restartCommand: ['true'] });
    await db.stage(bin.m, bin.file);
    await db.activate(bin.m);
    expect((await stat(db.pathOf(bin.m))).mode & 0o7777).toBe(0o755);
  });

  it('an unknown owner or group is STAGE_FAILED naming the field; nothing is staged', async () => {
    const d = new FilePlacementDriver({ kind: 'config', dataDir: dir });
    const target = join(dir, 'app.conf');
    const noUser = await member('x', { kind: 'config', placement: target, access: { owner: 'no-such-user-svc' } });
    await expect(d.stage(noUser.m, noUser.file)).rejects.toMatchObject({ code: 'STAGE_FAILED', field: 'components.model-a.placement.owner' });
    const noGroup = await member('y', { kind: 'config', placement: target, access: { group: 'no-such-group-svc' } });
    await expect(d.stage(noGroup.m, noGroup.file)).rejects.toMatchObject({ code: 'STAGE_FAILED', field: 'components.model-a.placement.group' });
    const badMode = await member('z', { kind: 'config', placement: target, access: { mode: '999' } });
    await expect(d.stage(badMode.m, badMode.file)).rejects.toMatchObject({ code: 'STAGE_FAILED', field: 'components.model-a.placement.mode' });
    expect((await readdir(dir)).filter((n) => n.startsWith('app.conf.svc-new') && !n.endsWith('.tmp'))).toEqual([]);
  });
});
