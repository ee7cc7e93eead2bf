import { spawn, execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';
import { tempDir as tempDirOf } from '@svc/test-kit';

export const BIN = resolve(import.meta.dirname, '..', '..', 'bin', 'run.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built svc-release binary as a user would: a child process, no NODE_ENV. */
export function runCli(args: string[], opts: { cwd?: string } = {}): Promise<CliRun> {
  const env = { ...process.env };
  delete env.NODE_ENV;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

/** Asserts the contracts §5 failure shape: the exit status and exactly one stderr line. */
export function expectFailure(r: CliRun, exit: 1 | 2, pattern: RegExp): void {
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  expect({ code: r.code, lines }).toEqual({ code: exit, lines: [expect.stringMatching(pattern)] });
  expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
}

export { requireTool } from '../../../../vitest.shared.js';

export function openssl(args: string[], cwd?: string): Buffer {
  return execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A temp dir for one test and its removal. */
export const tempDir = (): ReturnType<typeof tempDirOf> => tempDirOf('cli');
