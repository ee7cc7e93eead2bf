/**
 * The bundle port (bundle-server.ts): os-bundle members over HTTPS with byte ranges for RAUC's
 * streaming client, authenticated by the device's own mTLS certificate, authorized per
 * assigned rollout, every byte sent counted per device and rollout. Exercised with a real TLS
 * client and, where installed, through HAProxy in TCP mode and with curl (the libcurl RAUC
 * streams with).
 */
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableDrivers } from '../helpers/store.js';
import {
  enrollDevice,
  publishSignedRollout,
  startChannelFixture,
  type ChannelFixture,
  type EnrolledDevice,
  type PublishedRelease,
} from '../fixtures/device-channel.js';
import { DEVICE_CHANNEL_TLS_NAME } from '../../src/device-channel/server-tls.js';
import { rolloutDelivery } from '../../src/resources/deltas/views.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(
  port: number,
  path: string,
  o: { identity?: { keyPem: string; certPem: string }; caPem: string; range?: string; method?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: o.method ?? 'GET',
        servername: DEVICE_CHANNEL_TLS_NAME,
        ca: o.caPem,
        ...(o.identity ? { key: o.identity.keyPem, cert: o.identity.certPem } : {}),
        headers: o.range ? { range: o.range } : {},
        agent: false,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const HAPROXY = '/usr/sbin/haproxy';
const haveHaproxy = existsSync(HAPROXY);
const haveCurl = existsSync('/usr/bin/curl');
if (!haveHaproxy || !haveCurl) {
  if (process.env.CI === 'true') throw new Error('the bundle port test needs haproxy and curl');
  console.warn(`SKIPPING parts of the bundle port test: ${haveHaproxy ? '' : 'haproxy '}${haveCurl ? '' : 'curl '}not installed`);
}

describe.each(availableDrivers())('bundle port (%s)', (driver) => {
  let f: ChannelFixture;
  let dev: EnrolledDevice;
  let other: EnrolledDevice;
  let rel: PublishedRelease;
  let bundle: Buffer;
  let port: number;
  let path: string;
  const id = () => ({ keyPem: dev.key.keyPem, certPem: dev.certPem });

  beforeAll(async () => {
    f = await startChannelFixture(driver, { bundlePort: true });
    port = f.server.bundlePort!;
    dev = await enrollDevice(f, 'dev-a');
    other = await enrollDevice(f, 'dev-b');
    bundle = randomBytes(300_000);
    rel = await publishSignedRollout(f, { devices: ['dev-a'], bytes: bundle, placementPath: '', osBundle: true });
    path = `/v1/rollouts/${rel.rolloutId}/bundle.raucb`;
  });
  afterAll(async () => {
    dev?.clients.close();
    other?.clients.close();
    await f?.dispose();
  });

  const sent = async (device = 'dev-a') =>
    f.t.store.db.selectFrom('bundle_streams').selectAll().where('rollout_id', '=', rel.rolloutId).where('device_name', '=', device).executeTakeFirst();

  it('serves the whole bundle and single ranges (206 with Content-Range), counting every byte sent', async () => {
    const whole = await get(port, path, { identity: id(), caPem: f.serverCaPem });
    expect(whole.status).toBe(200);
    expect(whole.headers['accept-ranges']).toBe('bytes');
    expect(whole.headers['content-type']).toBe('application/vnd.rauc.bundle');
    expect(whole.body.equals(bundle)).toBe(true);

    const part = await get(port, path, { identity: id(), caPem: f.serverCaPem, range: 'bytes=1000-5095' });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 1000-5095/${bundle.length}`);
    expect(part.body.equals(bundle.subarray(1000, 5096))).toBe(true);

    const open = await get(port, path, { identity: id(), caPem: f.serverCaPem, range: `bytes=${bundle.length - 10}-` });
    expect(open.status).toBe(206);
    expect(open.body.equals(bundle.subarray(bundle.length - 10))).toBe(true);
    const suffix = await get(port, path, { identity: id(), caPem: f.serverCaPem, range: 'bytes=-8' });
    expect(suffix.status).toBe(206);
    expect(suffix.headers['content-range']).toBe(`bytes ${bundle.length - 8}-${bundle.length - 1}/${bundle.length}`);
    expect(suffix.body.equals(bundle.subarray(bundle.length - 8))).toBe(true);
    // HEAD: the length RAUC asks for first, no body, nothing counted
    const head = await get(port, path, { identity: id(), caPem: f.serverCaPem, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(bundle.length));

    const row = await sent();
    expect(Number(row?.bytes_sent)).toBe(bundle.length + 4096 + 10 + 8);
    expect(row).toMatchObject({ ranged_requests: 3 });
    const count = await get(port, `/v1/rollouts/${rel.rolloutId}/bundle-bytes`, { identity: id(), caPem: f.serverCaPem });
    expect(JSON.parse(count.body.toString('utf8'))).toEqual({ bytes_sent: bundle.length + 4096 + 10 + 8, full_length: bundle.length });
  });

  it("shows what was sent per device in the rollout's delivery view", async () => {
    const view = await rolloutDelivery(f.t.store.db, f.tenantId, rel.rolloutId, { limit: 50, offset: 0 });
    const row = await sent();
    expect(view?.bundle_streams_total).toBe(1);
    expect(view?.bundle_streams).toEqual([
      {
        device: 'dev-a',
        component: 'os',
        bytes_sent: Number(row!.bytes_sent),
        requests: row!.requests,
        ranged_requests: 3,
        first_at: row!.first_at.toISOString(),
        last_at: row!.last_at.toISOString(),
      },
    ]);
    expect(row!.requests).toBe(4);
  });

  it('answers 416 with the length for a range it cannot satisfy, and never sends the whole file instead', async () => {
    for (const range of [`bytes=${bundle.length}-`, 'bytes=0-1,5-9', 'bytes=9-2', 'lines=0-1', 'bytes=-0', 'bytes=x']) {
      const r = await get(port, path, { identity: id(), caPem: f.serverCaPem, range });
      expect(r.status, range).toBe(416);
      expect(r.headers['content-range'], range).toBe(`bytes */${bundle.length}`);
      expect(JSON.parse(r.body.toString('utf8')).error, range).toMatch(/^range: /);
    }
  });

  it('refuses a client without a certificate in the handshake, and another device, path or method with a clear status', async () => {
    await expect(get(port, path, { caPem: f.serverCaPem })).rejects.toThrow();
    const before = Number((await sent())?.bytes_sent);
    // dev-b is a device of the tenant, but the rollout is not assigned to it
    const stranger = await get(port, path, { identity: { keyPem: other.key.keyPem, certPem: other.certPem }, caPem: f.serverCaPem });
    expect(stranger.status).toBe(404);
    expect(JSON.parse(stranger.body.toString('utf8')).error).toContain('no os-bundle assigned to this device');
    expect(await sent('dev-b')).toBeUndefined();
    expect((await get(port, '/v1/rollouts/00000000-0000-4000-8000-000000000000/bundle.raucb', { identity: id(), caPem: f.serverCaPem })).status).toBe(404);
    expect((await get(port, '/tuf/metadata/root.json', { identity: id(), caPem: f.serverCaPem })).status).toBe(404);
    const post = await get(port, path, { identity: id(), caPem: f.serverCaPem, method: 'DELETE' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect(Number((await sent())?.bytes_sent)).toBe(before);
  });

  it('stops serving a device decommissioned meanwhile (the channel certificate check, not a cached yes)', async () => {
    const extra = await enrollDevice(f, 'dev-c');
    const rel2 = await publishSignedRollout(f, { devices: ['dev-c'], bytes: randomBytes(5000), placementPath: '', osBundle: true, version: '2.0.0' });
    const p2 = `/v1/rollouts/${rel2.rolloutId}/bundle.raucb`;
    const ident = { keyPem: extra.key.keyPem, certPem: extra.certPem };
    expect((await get(port, p2, { identity: ident, caPem: f.serverCaPem })).status).toBe(200);
    await f.t.store.db.updateTable('devices').set({ status: 'decommissioned' }).where('name', '=', 'dev-c').execute();
    f.ctx.credentials.clear();
    const refused = await get(port, p2, { identity: ident, caPem: f.serverCaPem });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body.toString('utf8')).error).toContain('decommissioned');
    extra.clients.close();
  });

  it.runIf(haveHaproxy && haveCurl)('serves ranges through HAProxy in TCP mode to curl with the device certificate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-bundle-haproxy-'));
    let proxy: ChildProcess | undefined;
    try {
      const front = await freePort();
      await writeFile(
        join(dir, 'h.cfg'),
        [
          'defaults',
          '  mode tcp',
          '  timeout connect 2s',
          '  timeout client 1m',
          '  timeout server 1m',
          'frontend bundles',
          `  bind 127.0.0.1:${front}`,
          '  default_backend servers',
          'backend servers',
          `  server s0 127.0.0.1:${port}`,
          '',
        ].join('\n'),
      );
      proxy = spawn(HAPROXY, ['-db', '-f', join(dir, 'h.cfg')], { stdio: 'ignore' });
      await writeFile(join(dir, 'dev.pem'), dev.certPem);
      await writeFile(join(dir, 'dev.key'), dev.key.keyPem, { mode: 0o600 });
      await writeFile(join(dir, 'ca.pem'), f.serverCaPem);
      const curl = (range: string) =>
        new Promise<{ code: number; out: Buffer; err: string }>((resolve) => {
          execFile(
            'curl',
            [
              '-sS',
              '--http1.1',
              '-D',
              join(dir, 'headers'),
              '--cacert',
              join(dir, 'ca.pem'),
              '--cert',
              join(dir, 'dev.pem'),
              '--key',
              join(dir, 'dev.key'),
              '-r',
              range,
              `https://127.0.0.1:${front}${path}`,
            ],
            { encoding: 'buffer' },
            (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr.toString('utf8') }),
          );
        });
      const before = Number((await sent())?.bytes_sent);
      let r = await curl('4096-8191');
      // HAProxy binds asynchronously: retry while the port is not up yet (bounded)
      for (let i = 0; i < 50 && r.code === 7; i++) {
        await sleep(100);
        r = await curl('4096-8191');
      }
      expect(r.err).toBe('');
      expect(r.out.equals(bundle.subarray(4096, 8192))).toBe(true);
      expect(Number((await sent())?.bytes_sent)).toBe(before + 4096);
    } finally {
      proxy?.kill('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
