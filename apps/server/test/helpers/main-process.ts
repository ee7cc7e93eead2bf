/**
 * The real server process (`node dist/main.js`, what `pnpm start` runs) for tests that
 * must see exactly what ships:
 *
 *   if (!mainBuilt()) ...skip...
 *   const { child, url, output } = await startMain({ SVC_DATA_DIR: dir, SVC_ADMIN_EMAIL: ..., SVC_ADMIN_PASSWORD: ... });
 *   // url = http://127.0.0.1:<port>/api/v1; output() = everything it printed so far
 *   expect(await stopMain(child)).toBe(0);
 *
 * Both addresses are port 0; `SVC_LOG_LEVEL` is `warn` unless given.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const MAIN_JS = resolve(import.meta.dirname, '../../dist/main.js');

/** True when dist/main.js exists; under CI=true its absence is an error, otherwise a loud skip. */
export function mainBuilt(suite: string): boolean {
  if (existsSync(MAIN_JS)) return true;
  if (process.env.CI === 'true') throw new Error(`${suite}: apps/server/dist/main.js missing; build before testing`);
  console.warn(`${suite}: apps/server/dist/main.js missing (run \`pnpm --filter @svc/server build\`); skipped`);
  return false;
}

export interface MainProcess {
  child: ChildProcess;
  url: string;
  output(): string;
}

export function startMain(env: Record<string, string>): Promise<MainProcess> {
  return new Promise((resolveStart, reject) => {
    const child = spawn(process.execPath, [MAIN_JS], {
      env: { PATH: process.env.PATH ?? '', SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let started = false;
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = started ? null : /svc-server: http listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        started = true;
        resolveStart({ child, url: `${m[1]}/api/v1`, output: () => out });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      if (!started) reject(new Error(`exited ${code} before listening: ${out}`));
    });
  });
}

/** SIGTERM and the exit status (0 after a clean shutdown). */
export function stopMain(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((r) => {
    child.on('exit', (code) => r(code));
    child.kill('SIGTERM');
  });
}
