import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The real process (`node dist/main.js`, what `pnpm start` runs) on the embedded default:
 * starts, migrates, creates the first admin, serves, stops on SIGTERM with status 0, and
 * keeps its data across a restart. Needs the build (`pnpm test` builds first).
 */
const main = resolve(import.meta.dirname, '../dist/main.js');
const built = existsSync(main);
if (!built && process.env.CI === 'true') throw new Error('platform-main: apps/server/dist/main.js missing; build before testing');
if (!built) console.warn('platform-main: apps/server/dist/main.js missing (run `pnpm --filter @svc/server build`); skipped');

function start(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolveStart, reject) => {
    const child = spawn(process.execPath, [main], {
      env: { PATH: process.env.PATH ?? '', SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /svc-server: http listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) resolveStart({ child, url: `${m[1]}/api/v1` });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited ${code} before listening: ${out}`)));
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => {
    child.removeAllListeners('exit');
    child.on('exit', (code) => r(code));
    child.kill('SIGTERM');
  });
}

async function login(url: string, email: string, password: string): Promise<number> {
  const res = await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  return res.status;
}

describe.skipIf(!built)('node dist/main.js on the embedded database', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-main-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts, creates the first admin, stops cleanly, and keeps data across a restart', async () => {
    const first = await start({ SVC_DATA_DIR: dir, SVC_ADMIN_EMAIL: 'root@example.test', SVC_ADMIN_PASSWORD: 'password123' });
    try {
      expect(await login(first.url, 'root@example.test', 'password123')).toBe(204);
    } finally {
      expect(await stop(first.child)).toBe(0);
    }
    // Restart: same data, admin settings now ignored (a user exists).
    const second = await start({ SVC_DATA_DIR: dir, SVC_ADMIN_EMAIL: 'other@example.test', SVC_ADMIN_PASSWORD: 'password123' });
    try {
      expect(await login(second.url, 'root@example.test', 'password123')).toBe(204);
      expect(await login(second.url, 'other@example.test', 'password123')).toBe(401);
    } finally {
      expect(await stop(second.child)).toBe(0);
    }
  }, 120_000);

  it('a bad setting fails at start with one line naming it and exit status 2', async () => {
    const child = spawn(process.execPath, [main], { env: { PATH: process.env.PATH ?? '', SVC_DATA_DIR: dir, SVC_HTTP_ADDR: 'nonsense' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^svc-server: SVC_HTTP_ADDR: /);
  });
});
