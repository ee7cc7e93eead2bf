import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export { requireTool } from '../../../../vitest.shared.js';

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
