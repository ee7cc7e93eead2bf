import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { issueCert, makeCa, makeServerCert } from '@svc/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RaucSlotDriver } from '../src/index.js';
import { startRaucEnv, type RaucEnv } from './helpers/rauc-env.js';
import { requireTool, tempDir } from './helpers/tools.js';

/**
 * `rauc install https://...` by the RAUC driver (RaucSlotDriver.installStreaming) with the
 * real rauc, its D-Bus service and `[streaming] tls-cert / tls-key / tls-ca` in system.conf,
 * against an HTTPS server that demands a client certificate and serves byte ranges (the
 * server's own bundle port is tested in apps/server/test/device-channel/bundles.test.ts).
 * Streaming needs three things of the device: a RAUC built with --enable-streaming, nbd in
 * the kernel (RAUC serves the remote bundle to the kernel through /dev/nbd*) and
 * device-mapper (a verity bundle is mounted through dm-verity). Where one is missing, the
 * stream fails with RAUC's own error and the driver installs the full bundle instead; that
 * path runs everywhere. The adaptive path runs only where all three exist.
 */
const haveTools = ['rauc', 'dbus-daemon', 'mksquashfs', 'unsquashfs', 'mkfs.ext4', 'openssl'].every((t) =>
  requireTool(t, { mksquashfs: 'squashfs-tools', unsquashfs: 'squashfs-tools', 'mkfs.ext4': 'e2fsprogs', 'dbus-daemon': 'dbus-daemon' }[t] ?? t),
);
const isRoot = process.getuid?.() === 0;

/** What stops RAUC streaming on this machine, or null when nothing does. */
function streamingMissing(): string | null {
  if (!haveTools) return 'rauc is not installed';
  const raucBinary = execFileSync('sh', ['-c', 'command -v rauc'], { encoding: 'utf8' }).trim();
  if (readFileSync(raucBinary).includes('configured without --enable-streaming')) return `${raucBinary} is built without --enable-streaming`;
  if (!existsSync('/dev/nbd0')) return 'no /dev/nbd0 (the kernel has no nbd)';
  if (!existsSync('/dev/mapper/control')) return 'no /dev/mapper/control (the kernel has no device-mapper)';
  return null;
}
const missing = streamingMissing();
if (haveTools && isRoot && missing !== null) {
  console.warn(`RAUC streaming is not possible here (${missing}): only the fallback to the full bundle is exercised`);
}

/** A CA, a server certificate for 127.0.0.1 and a client (device) certificate. */
function makePki(dir: string): void {
  const ca = makeCa(dir, 'tls-ca', { cn: 'bundle port CA', days: 2 });
  makeServerCert(dir, 'server', ca, ['IP:127.0.0.1'], { days: 2 });
  issueCert(dir, 'device', ca, { ext: ['extendedKeyUsage=clientAuth'], days: 2 });
}

describe.runIf(haveTools && isRoot).sequential('RAUC streaming install (real rauc)', () => {
  let rauc: RaucEnv;
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let server: Server;
  let port = 0;
  const served = new Map<string, string>();
  let bytesSent = 0;
  let requests = 0;
  let handshakesRefused = 0;

  beforeAll(async () => {
    tmp = await tempDir();
    makePki(tmp.dir);
    rauc = await startRaucEnv({
      streaming: { tlsCert: join(tmp.dir, 'device.pem'), tlsKey: join(tmp.dir, 'device.key'), tlsCa: join(tmp.dir, 'tls-ca.pem') },
    });
    const read = (f: string) => readFileSync(join(tmp.dir, f));
    server = createServer(
      { key: read('server.key'), cert: read('server.pem'), ca: read('tls-ca.pem'), requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        void (async () => {
          requests++;
          const file = served.get(req.url ?? '');
          if (file === undefined) return res.writeHead(404).end();
          const size = (await stat(file)).size;
          const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
          const start = m ? Number(m[1]) : 0;
          const end = m && m[2] !== '' ? Math.min(Number(m[2]), size - 1) : size - 1;
          if (m && start >= size) return res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
          res.writeHead(m ? 206 : 200, {
            'accept-ranges': 'bytes',
            'content-length': String(end - start + 1),
            ...(m ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
          });
          if (req.method === 'HEAD') return res.end();
          bytesSent += end - start + 1;
          createReadStream(file, { start, end }).pipe(res);
        })();
      },
    );
    server.on('tlsClientError', () => handshakesRefused++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server?.close();
    await rauc?.close();
    await tmp?.cleanup();
  });

  const slots = () => new RaucSlotDriver({ env: rauc.env, conf: rauc.conf, rebootCommand: ['true'] });

  it.runIf(missing !== null)('falls back to the full bundle when rauc cannot stream, and the install is the same as before', async () => {
    const bundle = await rauc.bundle('v2', { version: '2.0.0' });
    served.set('/v2.raucb', bundle);
    let fullDownloads = 0;
    const before = await slots().status();
    expect(before).toMatchObject({ booted: 'A', primary: 'A' });
    const result = await slots().installStreaming(`https://127.0.0.1:${port}/v2.raucb`, async () => {
      fullDownloads++;
      return bundle;
    });
    expect(result.method).toBe('full');
    // RAUC's own last error line, whichever of the missing parts stopped it first
    expect(result.streamError).toMatch(
      /^rauc install failed: LastError: (Failed to download bundle https:\/\/127\.0\.0\.1:\d+\/v2\.raucb: Transfer failed: .+|.*streaming.*|.*nbd.*|.*\/dev\/mapper\/control.*)$/,
    );
    await writeFile(join(tmp.dir, 'stream-error.txt'), result.streamError ?? '');
    expect(fullDownloads).toBe(1);
    // the slot evidence is what a local install gives
    expect(await slots().status()).toEqual({ compatible: 'svc-test', booted: 'A', primary: 'B' });
    expect(await rauc.bootState()).toMatchObject({ primary: 'B', B: 'good' });
  });

  it.runIf(missing !== null)('a verity bundle with block-hash-index builds and verifies here, and its install stops at what the kernel lacks', async () => {
    const bundle = await rauc.bundle('v3', { version: '3.0.0', format: 'verity' });
    const info = JSON.parse(execFileSync('rauc', ['info', '--output-format=json', `--conf=${rauc.conf}`, bundle], { env: rauc.env, encoding: 'utf8' })) as {
      images?: { rootfs?: { adaptive?: string[] } }[];
    };
    expect(JSON.stringify(info)).toContain('block-hash-index');
    await expect(slots().install(bundle)).rejects.toThrow(/rauc install failed: LastError: .+/);
  });

  it.runIf(missing === null)('installs a verity bundle by streaming, and a second bundle differing in a few blocks fetches a fraction', async () => {
    const payload = randomBytes(2 * 1024 * 1024);
    const v1 = await rauc.bundle('s1', { version: '1.0.0', format: 'verity', payload });
    served.set('/s1.raucb', v1);
    const first = await slots().installStreaming(`https://127.0.0.1:${port}/s1.raucb`, () => Promise.reject(new Error('the stream should not fail')));
    expect(first.method).toBe('adaptive');
    const changed = Buffer.from(payload);
    for (const block of [3, 100, 401]) randomBytes(4096).copy(changed, block * 4096);
    const v2 = await rauc.bundle('s2', { version: '1.0.1', format: 'verity', payload: changed });
    served.set('/s2.raucb', v2);
    const sentBefore = bytesSent;
    const second = await slots().installStreaming(`https://127.0.0.1:${port}/s2.raucb`, () => Promise.reject(new Error('the stream should not fail')));
    expect(second.method).toBe('adaptive');
    expect(bytesSent - sentBefore).toBeLessThan((await stat(v2)).size / 4);
    expect(requests).toBeGreaterThan(0);
    expect(handshakesRefused).toBe(0);
  });
});
