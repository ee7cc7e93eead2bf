import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFailure, runCli, tempDir } from './helpers/cli.js';

const COMMANDS = ['keygen', 'sign', 'sign-root', 'verify', 'verify-receipt', 'verify-evidence'];
const TENANT = '3f1c2a9e-8a4b-4c1e-9d2f-6b7a8c9d0e1f';

describe('svc-release help', () => {
  it('lists every command', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^\\s+${c}\\s+\\S`, 'm'));
  });

  it.each(COMMANDS)('%s --help shows usage, flags and examples', async (c) => {
    const r = await runCli([c, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`$ svc-release ${c}`);
    expect(r.stdout).toMatch(/^EXAMPLES$/m);
    expect(r.stdout).toMatch(/^FLAGS$/m);
  });
});

describe('svc-release usage errors: exit 2, one stderr line', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: string;
  beforeAll(async () => {
    tmp = await tempDir();
    env = join(tmp.dir, 'env.json');
    await writeFile(env, '{}');
  });
  afterAll(() => tmp.cleanup());

  it('missing --tenant', async () => {
    const r = await runCli(['verify', env, '--key', env, '--product', 'gateway']);
    expectFailure(r, 2, /^usage: USAGE: .*tenant.* \(see svc-release verify --help\)$/);
  });

  it('unknown flag', async () => {
    const r = await runCli(['verify', env, '--key', env, '--tenant', TENANT, '--product', 'gateway', '--bogus']);
    expectFailure(r, 2, /^usage: USAGE: .*--bogus/);
  });

  it.each(['yesterday', '2026-02-30T00:00:00Z', '2026-01-01 00:00:00', '2026-01-01T00:00:00', '2026-01-01T23:59:60Z'])('bad --at %s', async (at) => {
    const r = await runCli(['verify', env, '--key', env, '--tenant', TENANT, '--product', 'gateway', '--at', at]);
    expectFailure(r, 2, /^usage: USAGE: --at ".*": /);
  });

  it('missing argument', async () => {
    const r = await runCli(['verify', '--key', env, '--tenant', TENANT, '--product', 'gateway']);
    expectFailure(r, 2, /^usage: USAGE: Missing 1 required arg/);
  });

  it('unknown command', async () => {
    const r = await runCli(['frobnicate']);
    expectFailure(r, 2, /^usage: USAGE: command frobnicate not found \(see svc-release --help\)$/);
  });

  it('missing input file', async () => {
    const r = await runCli(['verify', join(tmp.dir, 'nope.json'), '--key', env, '--tenant', TENANT, '--product', 'gateway']);
    expectFailure(r, 2, /^usage: INPUT_UNREADABLE: (key|envelope) .*: no such file/);
  });

  it('missing key file', async () => {
    const r = await runCli(['verify', env, '--key', join(tmp.dir, 'nope.pub'), '--tenant', TENANT, '--product', 'gateway']);
    expectFailure(r, 2, /^usage: INPUT_UNREADABLE: key .*nope\.pub: no such file/);
  });

  it('a directory as input', async () => {
    const r = await runCli(['sign', tmp.dir, '--key', env]);
    expectFailure(r, 2, /^usage: INPUT_UNREADABLE: .*is a directory/);
  });

  it('missing --out on keygen', async () => {
    const r = await runCli(['keygen']);
    expectFailure(r, 2, /^usage: USAGE: .*out/);
  });
});
