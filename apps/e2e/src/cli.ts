import { spawn } from 'node:child_process';
import { CLI_BIN } from './paths.js';

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `svc-release` binary (apps/cli/bin/run.js) and collects its output. */
export function svcRelease(args: string[], opts: { timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}
