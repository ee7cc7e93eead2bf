import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const pkg = resolve(import.meta.dirname, '..');
const run = promisify(execFile);

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}

// the committed generated code is exactly what the .proto files produce today.
describe('src/__generated__', () => {
  let tmp = '';
  afterAll(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('regenerating from proto/ changes nothing', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'device-proto-'));
    const out = join(tmp, 'gen');
    await run('bash', [join(pkg, 'scripts/generate.sh'), out], { cwd: pkg });
    const committed = join(pkg, 'src/__generated__');
    const files = await listFiles(out);
    expect(files.length).toBeGreaterThan(0);
    expect(await listFiles(committed)).toEqual(files);
    for (const f of files) {
      const fresh = await readFile(join(out, f), 'utf8');
      const kept = await readFile(join(committed, f), 'utf8');
      expect(kept, `${f} is stale: run pnpm --filter @svc/device-proto generate`).toBe(fresh);
    }
  }, 60_000);
});
