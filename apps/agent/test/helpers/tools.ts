import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * True when `tool` is on PATH. Missing: warn loudly naming the apt package and skip, unless
 * CI=true, where a missing tool is a failure (tests must not silently stop testing).
 */
export function requireTool(tool: string, aptPackage: string = tool): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    if (process.env.CI === 'true') throw new Error(`${tool} is required in CI: apt-get install ${aptPackage}`);
    console.warn(`SKIPPING: ${tool} not found; install the Debian package "${aptPackage}" to run these tests`);
    return false;
  }
}

export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-agent-'));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-agent-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
