import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/cli.js';

// scripts/bench.mjs (the root `pnpm bench` runner) lives with the CLI's tests because
// it is plain ESM without types.
const BENCH = resolve(import.meta.dirname, '..', '..', '..', 'scripts', 'bench.mjs');

/** `out`: stdout and stderr as they came; `err`: stderr alone. */
function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [BENCH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      err += d;
    });
    child.on('error', reject);
    child.on('close', (code) => done({ code, out, err }));
  });
}

describe('scripts/bench.mjs', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const pkg = async (dir: string, manifest: Record<string, unknown>) => {
    await mkdir(join(tmp.dir, dir), { recursive: true });
    await writeFile(join(tmp.dir, dir, 'package.json'), JSON.stringify(manifest));
  };

  beforeAll(async () => {
    tmp = await tempDir();
    await writeFile(join(tmp.dir, 'pnpm-workspace.yaml'), 'packages:\n  - packages/*\n  - apps/*\n');
    await writeFile(join(tmp.dir, 'package.json'), JSON.stringify({ name: 'bench-fixture', private: true }));
    await pkg('packages/alpha', { name: '@t/alpha', scripts: { bench: 'node -e "console.log(\'alpha-bench-ran\')"' } });
    await pkg('packages/quiet', { name: '@t/quiet', scripts: { test: 'true' } });
    await pkg('apps/broken', { name: '@t/broken', scripts: { bench: 'node -e "process.exit(3)"' } });
  });
  afterAll(() => tmp.cleanup());

  it('discovers packages with a bench script, packages before apps', async () => {
    const { discover } = (await import(BENCH)) as { discover: (root: string) => { name: string; dir: string }[] };
    expect(discover(tmp.dir).map((b) => b.name)).toEqual(['@t/alpha', '@t/broken']);
    // the real workspace: release-core declares one
    expect(discover(resolve(BENCH, '..', '..')).map((b) => b.name)).toContain('@svc/release-core');
  });

  it('runs each in turn with a header, streams output, and fails when one fails', async () => {
    const r = await run(['--root', tmp.dir]);
    expect(r.code).toBe(1);
    expect(r.out).toContain('=== @t/alpha (packages/alpha)');
    expect(r.out).toContain('alpha-bench-ran');
    expect(r.out).toContain('=== @t/alpha: ok');
    expect(r.out).toMatch(/=== @t\/broken: FAILED/);
    expect(r.err).toMatch(/^bench: 1 passed, 1 failed: @t\/broken$/m);
    expect(r.out).not.toContain('@t/quiet');
  });

  it('exits 0 when every bench passes, and 2 for an unknown package name', async () => {
    expect((await run(['--root', tmp.dir, '@t/alpha'])).code).toBe(0);
    const unknown = await run(['--root', tmp.dir, '@t/nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toBe('bench: no bench script in @t/nope\n');
  });

  it('exits 1 when no package has a bench script: nothing was measured', async () => {
    const empty = await tempDir();
    try {
      await writeFile(join(empty.dir, 'package.json'), JSON.stringify({ name: 'empty', private: true }));
      expect(await run(['--root', empty.dir])).toEqual({
        code: 1,
        out: 'bench: no workspace package has a bench script\n',
        err: 'bench: no workspace package has a bench script\n',
      });
    } finally {
      await empty.cleanup();
    }
  });
});
