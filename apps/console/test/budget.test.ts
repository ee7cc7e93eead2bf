import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../scripts/budget.mjs');

/** A build laid out as Vite writes it: index.html naming an entry script and a preloaded chunk. */
async function build(dir: string, html: string, files: Record<string, Buffer | string>): Promise<string> {
  await mkdir(join(dir, 'assets'), { recursive: true });
  await writeFile(join(dir, 'index.html'), html);
  for (const [name, bytes] of Object.entries(files)) await writeFile(join(dir, name), bytes);
  return dir;
}

const run = (dist: string) => spawnSync(process.execPath, [SCRIPT, '--dist', dist], { encoding: 'utf8' });
const PAGE =
  '<!doctype html><script type="module" crossorigin src="/assets/index-a.js"></script><link rel="modulepreload" crossorigin href="/assets/vendor-b.js">';

describe('the initial JavaScript budget (scripts/budget.mjs, run by the build)', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-console-budget-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('passes a build whose entry and preloaded modules stay under 250 KB gzip', async () => {
    const dist = await build(join(root, 'small'), PAGE, {
      'assets/index-a.js': 'export const a = 1;'.repeat(1000),
      'assets/vendor-b.js': randomBytes(100 * 1024).toString('base64'),
    });
    const r = run(dist);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/within the 250 KB budget/);
  });

  it('fails the build when the entry plus its preloads are over, counting the preloaded chunk', async () => {
    // random bytes barely compress: 2 x 150 KB of them is over 250 KB gzip, either alone is not
    const half = randomBytes(150 * 1024);
    const dist = await build(join(root, 'big'), PAGE, { 'assets/index-a.js': half, 'assets/vendor-b.js': randomBytes(150 * 1024) });
    const r = run(dist);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/OVER the 250 KB budget/);
  });

  it('fails the build when index.html has an inline script (the CSP would block it)', async () => {
    const dist = await build(join(root, 'inline'), `${PAGE}<script>window.x = 1</script>`, { 'assets/index-a.js': 'x', 'assets/vendor-b.js': 'y' });
    const r = run(dist);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/inline script/);
  });
});
