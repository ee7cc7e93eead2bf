import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN_JS, mainBuilt, startMain as start, stopMain as stop } from './helpers/main-process.js';
import { dropSchemaAt } from './helpers/store.js';

/**
 * The real process (`node dist/main.js`, what `pnpm start` runs) on the embedded default:
 * starts, migrates, creates the first admin, serves, stops on SIGTERM with status 0, and
 * keeps its data across a restart. Needs the build (`pnpm test` builds first).
 */
const built = mainBuilt('platform-main');

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
    const child = spawn(process.execPath, [MAIN_JS], {
      env: { PATH: process.env.PATH ?? '', SVC_DATA_DIR: dir, SVC_HTTP_ADDR: 'nonsense' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^svc-server: SVC_HTTP_ADDR: /);
  });
});

const pgUrl = process.env.SVC_TEST_DATABASE_URL;
if (!pgUrl && process.env.CI === 'true') throw new Error('platform-main: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('platform-main: SVC_TEST_DATABASE_URL not set; two real processes on PostgreSQL skipped');

describe.skipIf(!built || !pgUrl)('two real node dist/main.js processes on one PostgreSQL schema', () => {
  let dir: string;
  const schema = `t_main_${process.pid}_${Date.now() % 100000}`;
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) await stop(c);
    await dropSchemaAt(pgUrl!, schema);
    if (dir) await rm(dir, { recursive: true, force: true });
    if (dir) await rm(`${dir}.kek`, { force: true });
  });

  it('start together, one admin; a session from A works on B; data created on A lists on B', async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-main-pg-'));
    await writeFile(`${dir}.kek`, randomBytes(32), { mode: 0o600 });
    const env = {
      SVC_DATA_DIR: dir,
      SVC_DATABASE_URL: pgUrl!,
      SVC_DATABASE_SCHEMA: schema,
      // both processes open the same KEK (required with PostgreSQL), kept outside the data dir
      SVC_KEK_FILE: `${dir}.kek`,
      SVC_ADMIN_EMAIL: 'root@example.test',
      SVC_ADMIN_PASSWORD: 'password123',
    };
    const [a, b] = await Promise.all([start(env), start(env)]);
    children.push(a.child, b.child);
    const res = await fetch(`${a.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.test', password: 'password123' }),
    });
    expect(res.status).toBe(204);
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    expect((await fetch(`${b.url}/auth/me`, { headers: { cookie } })).status).toBe(200);
    const created = await fetch(`${a.url}/enroll-tokens`, {
      method: 'POST',
      headers: { cookie, 'x-svc-csrf': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'from A' }),
    });
    expect(created.status).toBe(201);
    const listed = (await (await fetch(`${b.url}/enroll-tokens`, { headers: { cookie } })).json()) as { enroll_tokens: { name: string }[] };
    expect(listed.enroll_tokens.map((t) => t.name)).toEqual(['from A']);
    const users = (await (await fetch(`${b.url}/users`, { headers: { cookie } })).json()) as { total: number };
    expect(users.total).toBe(1);
    expect(await stop(a.child)).toBe(0);
    expect(await stop(b.child)).toBe(0);
  }, 120_000);
});
