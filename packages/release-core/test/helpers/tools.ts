import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * True when the system tool is on PATH. When it is not: fail under CI, otherwise warn loudly
 * naming the Debian package and let the caller skip (docs/development.md).
 */
export function requireTool(tool: string, debianPackage = tool): boolean {
  const found = spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
  if (found) return true;
  const msg = `${tool} not found: install the "${debianPackage}" package to run these tests`;
  if (process.env.CI === 'true') throw new Error(msg);
  console.warn(`SKIPPING: ${msg}`);
  return false;
}

export function openssl(args: string[], input?: Uint8Array | string): Buffer {
  return execFileSync('openssl', args, { input, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** openssl exit status and output without throwing (for "openssl refuses this" tests). */
export function opensslStatus(args: string[]): { status: number; output: string } {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  return { status: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

export function withTempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'release-core-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
