import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_TUNING } from '../../src/limits.js';
import { openStore } from '../../src/store/open.js';
import { dropSchemaAt } from '../helpers/store.js';
import { mainBuilt, startMain } from '../helpers/main-process.js';
import { artifactMultipart } from '../fixtures/release-flow.js';

/**
 * The real server process on PostgreSQL stops within its bound on SIGTERM (docs/server.md
 * "Stopping") while hundreds of devices of the fleet simulator hold their connections and
 * check in, and an artifact upload is half sent: the ports stop accepting, the grace runs out
 * on the upload, its connection is cut and the process exits; the upload left no artifact and
 * no stored blob behind.
 */
const built = mainBuilt('platform-shutdown');
const pgUrl = process.env.SVC_TEST_DATABASE_URL;
const SIM_MAIN = resolve(import.meta.dirname, '../../../agent/dist/sim/main.js');
const simBuilt = existsSync(SIM_MAIN);
if (!simBuilt && process.env.CI === 'true') throw new Error(`platform-shutdown: ${SIM_MAIN} missing; build before testing`);
const DEVICES = 300;
const admin = { SVC_ADMIN_EMAIL: 'admin@shutdown.test', SVC_ADMIN_PASSWORD: 'shutdown-password-1' };

describe.skipIf(!built || !pgUrl || !simBuilt)('stopping node dist/main.js with a connected fleet', () => {
  let dir: string;
  const schema = `t_shutdown_${process.pid}_${Date.now() % 100000}`;
  let sim: ChildProcess | undefined;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-shutdown-'));
    await writeFile(`${dir}.kek`, randomBytes(32), { mode: 0o600 });
  });
  afterAll(async () => {
    if (sim !== undefined && sim.exitCode === null && sim.signalCode === null) {
      sim.kill('SIGKILL');
      await once(sim, 'exit');
    }
    await dropSchemaAt(pgUrl!, schema);
    await rm(dir, { recursive: true, force: true });
    await rm(`${dir}.kek`, { force: true });
  });

  it('SIGTERM with 300 devices connected and an upload half sent: exits 0 within the grace and the close, the upload committed nothing', async () => {
    const m = await startMain({
      SVC_DATA_DIR: dir,
      SVC_DATABASE_URL: pgUrl!,
      SVC_DATABASE_SCHEMA: schema,
      SVC_KEK_FILE: `${dir}.kek`,
      SVC_LOG_LEVEL: 'info',
      ...admin,
    });
    const store = await openStore({ databaseUrl: pgUrl!, schema });
    try {
      const login = await fetch(`${m.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: admin.SVC_ADMIN_EMAIL, password: admin.SVC_ADMIN_PASSWORD }),
      });
      expect(login.status).toBe(204);
      const cookie = /svc_session=[^;]+/.exec(login.headers.get('set-cookie') ?? '')![0];
      const headers = { cookie, 'x-svc-csrf': '1', 'content-type': 'application/json' };
      const tokenRes = await fetch(`${m.url}/enroll-tokens`, { method: 'POST', headers, body: JSON.stringify({ name: 'shutdown-fleet', max_uses: DEVICES }) });
      expect(tokenRes.status).toBe(201);
      const { token } = (await tokenRes.json()) as { token: string };
      const devicePort = /"port":(\d+)[^\n]*device channel listening/.exec(m.output())![1];

      // the fleet: persistent connections, a check-in per device every second
      sim = spawn(
        process.execPath,
        [
          SIM_MAIN,
          ...['--server', `127.0.0.1:${devicePort}`, '--server-ca', join(dir, 'ca', 'server', 'ca.pem'), '--token', token],
          ...['--devices', String(DEVICES), '--prefix', 'shutdown', '--connection', 'persistent', '--interval', '1'],
          ...['--max-in-flight', '64', '--max-errors', String(Number.MAX_SAFE_INTEGER), '--stats-every', '1'],
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const events: Record<string, unknown>[] = [];
      const simText: string[] = [];
      createInterface({ input: sim.stdout! }).on('line', (l) => {
        try {
          events.push(JSON.parse(l) as Record<string, unknown>);
        } catch {
          simText.push(l);
        }
      });
      createInterface({ input: sim.stderr! }).on('line', (l) => simText.push(l));
      const waitFor = async (pred: (e: Record<string, unknown>) => boolean, what: string) => {
        for (let i = 0; i < 1800; i++) {
          const hit = events.find(pred);
          if (hit) return hit;
          if (sim!.exitCode !== null) throw new Error(`simulator exited before ${what}: ${simText.slice(-3).join(' | ')}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`simulator: no ${what} within 180 s (${simText.slice(-3).join(' | ')})`);
      };
      expect((await waitFor((e) => e.event === 'connected', 'connected')).devices).toBe(DEVICES);
      // check-ins under way on the held connections
      await waitFor((e) => e.event === 'stats' && typeof e.check_ins === 'number' && e.check_ins > 0, 'a check-in');

      // an artifact upload: the head and half the body, the rest never comes
      const bytes = randomBytes(3 * 1024 * 1024);
      const { payload, contentType } = artifactMultipart({ name: 'half-sent', version: '1.0.0', kind: 'model', bytes });
      const url = new URL(`${m.url}/artifacts`);
      const upload = request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { cookie, 'x-svc-csrf': '1', 'content-type': contentType, 'content-length': payload.length },
      });
      const answered = new Promise<string>((r) => {
        upload.on('response', (res) => r(`answered ${res.statusCode}`));
        upload.on('error', (e) => r(`cut: ${e.message}`));
      });
      upload.write(payload.subarray(0, payload.length >> 1));
      // the server is storing it: an upload row of the blob store is writing
      for (let i = 0; ; i++) {
        const w = await sql<{ n: number }>`SELECT count(*)::int AS n FROM blobs WHERE state = 'writing'`.execute(store.db);
        if (w.rows[0]!.n > 0) break;
        if (i > 600) throw new Error('the upload never reached the blob store');
        await new Promise((r) => setTimeout(r, 100));
      }

      const t0 = performance.now();
      const exited = once(m.child, 'exit') as Promise<[number | null, string | null]>;
      m.child.kill('SIGTERM');
      const bound = SERVER_TUNING.shutdownGraceMs + SERVER_TUNING.shutdownCloseMs;
      // a process still there well past its bound is a failure, not a hung test
      const late = setTimeout(() => m.child.kill('SIGKILL'), bound + 30_000);
      const [code, signal] = await exited;
      clearTimeout(late);
      const ms = performance.now() - t0;
      expect(signal, `still running ${Math.round(ms)} ms after SIGTERM: ${m.output().slice(-2000)}`).toBeNull();
      // the bound: the grace, then the close; a few seconds for a loaded machine to schedule the exit
      expect(code, m.output().slice(-2000)).toBe(0);
      expect(ms).toBeLessThan(bound + 5000);
      const out = m.output();
      expect(out).toContain('HTTP requests still running at the end of the shutdown grace: connections closed');
      expect(out).toMatch(/"msg":"shut down"/);
      expect(await answered).toMatch(/^cut: /);

      // nothing of the upload committed: no artifact, no stored blob of those bytes
      const artifacts = await sql<{ n: number }>`SELECT count(*)::int AS n FROM artifacts WHERE name = 'half-sent'`.execute(store.db);
      expect(artifacts.rows[0]!.n).toBe(0);
      const stored = await sql<{ n: number }>`SELECT count(*)::int AS n FROM blobs WHERE state = 'stored' AND length >= ${bytes.length}`.execute(store.db);
      expect(stored.rows[0]!.n).toBe(0);
    } finally {
      if (m.child.exitCode === null && m.child.signalCode === null) m.child.kill('SIGKILL');
      await store.close();
    }
  }, 600_000);
});
