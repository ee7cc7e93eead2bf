// scratch: enrollment/s of one server on PostgreSQL with the fleet simulator
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
const N = Number(process.env.N ?? 2000);
const PG = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `scratch_${process.pid}`;
const dir = await mkdtemp(join(tmpdir(), 'scr-'));
const srv = spawn(process.execPath, ['../dist/main.js'.replace('..', new URL('../..', import.meta.url).pathname)], { env: { ...process.env, SVC_DATA_DIR: dir, SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_ADMIN_EMAIL: 'a@b.c', SVC_ADMIN_PASSWORD: 'pw-pw-pw-pw-pw-12', SVC_DATABASE_URL: PG, SVC_DATABASE_SCHEMA: schema }, stdio: ['ignore', 'pipe', 'pipe'] });
let http, dev;
createInterface({ input: srv.stdout }).on('line', (l) => { const m = /listening on (http\S+)/.exec(l); if (m) http = m[1]; try { const j = JSON.parse(l); if (j.msg === 'device channel listening') dev = `127.0.0.1:${j.port}`; } catch {} });
while (!http || !dev) await new Promise((r) => setTimeout(r, 100));
const login = await fetch(`${http}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@b.c', password: 'pw-pw-pw-pw-pw-12' }) });
const cookie = login.headers.get('set-cookie').split(';')[0];
const tok = await (await fetch(`${http}/api/v1/enroll-tokens`, { method: 'POST', headers: { cookie, 'x-svc-csrf': '1', 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x', max_uses: N }) })).json();
const sim = spawn(process.execPath, [new URL('../../../agent/dist/sim/main.js', import.meta.url).pathname, '--server', dev, '--token', tok.token, '--devices', String(N), '--server-ca', join(dir, 'ca/server/ca.pem'), '--concurrency', process.env.C ?? '64', '--duration', '1', '--interval', '60'], { stdio: ['ignore', 'pipe', 'inherit'] });
for await (const l of createInterface({ input: sim.stdout })) { if (l.includes('"enrolled"')) { const j = JSON.parse(l); console.log(`enrolled ${j.devices} in ${j.seconds}s = ${(j.devices / j.seconds).toFixed(0)}/s errors ${j.errors} ${j.last_error ?? ''}`); } }
srv.kill('SIGTERM'); await new Promise((r) => srv.once('exit', r));
const c = new pg.Client(PG); await c.connect(); await c.query(`DROP SCHEMA "${schema}" CASCADE`); await c.end(); await rm(dir, { recursive: true, force: true });
