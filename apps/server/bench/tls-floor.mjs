// What one mutual-TLS HTTP/2 connection costs a bare Node server (docs/device-channel.md,
// "What bounds each figure", RSS per device): a plain node:http2 secure server asking for
// client certificates, no grpc-js and no handler code, and BENCH_FLOOR_CONNECTIONS (2000)
// loopback connections from another process, each with a client certificate and two requests.
// Prints (server RSS after - before) / connections, after a full GC in the server.
// BENCH_FLOOR_SERVER_OPTIONS (JSON) is merged into the http2.createSecureServer options, e.g.
// '{"secureOptions":16384}' (SSL_OP_NO_TICKET) or '{"requestCert":false}'.
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http2 from 'node:http2';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEVICE_CHANNEL_TLS_NAME } from '../dist/device-channel/server-tls.js';
import { bareTlsMaterial } from './bare-tls.mjs';

const N = Number(process.env.BENCH_FLOOR_CONNECTIONS ?? 2000);
const [role, dir, port] = process.argv.slice(2);
const rssKiB = async () => Number(/VmRSS:\s+(\d+)/.exec(await readFile('/proc/self/status', 'utf8'))[1]);
const pem = (name) => readFile(join(dir, name), 'utf8');

if (role === 'serve') {
  const opts = JSON.parse(process.env.BENCH_FLOOR_SERVER_OPTIONS ?? '{}');
  const server = http2.createSecureServer({
    key: await pem('server.key'),
    cert: await pem('server.pem'),
    ca: await pem('ca.pem'),
    requestCert: true,
    rejectUnauthorized: false,
    ...opts,
  });
  server.on('stream', (s) => {
    s.respond({ ':status': 200, 'content-type': 'application/grpc' });
    s.end();
  });
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
  // a line on stdin: full GC, then the RSS
  createInterface({ input: process.stdin }).on('line', async () => {
    globalThis.gc();
    console.log(JSON.stringify({ rss: await rssKiB() }));
  });
} else if (role === 'connect') {
  const tls = { key: await pem('client.key'), cert: await pem('client.pem'), ca: await pem('ca.pem'), servername: DEVICE_CHANNEL_TLS_NAME };
  const request = (s) =>
    new Promise((resolve, reject) => {
      const r = s.request({ ':method': 'POST', ':path': '/x', 'content-type': 'application/grpc' });
      r.on('data', () => undefined)
        .on('end', resolve)
        .on('error', reject);
      r.end();
    });
  const sessions = [];
  for (let i = 0; i < N; i += 50) {
    const batch = Array.from({ length: Math.min(50, N - i) }, () => http2.connect(`https://127.0.0.1:${port}`, tls));
    sessions.push(...batch);
    await Promise.all(batch.map(request));
  }
  for (let i = 0; i < N; i += 100) await Promise.all(sessions.slice(i, i + 100).map(request));
  console.log(JSON.stringify({ connected: sessions.length }));
  setInterval(() => undefined, 60_000);
} else {
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-floor-'));
  try {
    const m = await bareTlsMaterial();
    await writeFile(join(work, 'server.pem'), m.server.certPem);
    await writeFile(join(work, 'server.key'), m.server.keyPem);
    await writeFile(join(work, 'ca.pem'), m.serverCa + m.clientCa);
    await writeFile(join(work, 'client.pem'), m.client.certPem);
    await writeFile(join(work, 'client.key'), m.client.keyPem);

    const lines = (child) => {
      const queue = [];
      createInterface({ input: child.stdout }).on('line', (l) => queue.push(JSON.parse(l)));
      child.stderr.pipe(process.stderr);
      return async () => {
        while (queue.length === 0) {
          if (child.exitCode !== null) throw new Error('child exited');
          await new Promise((r) => setTimeout(r, 50));
        }
        return queue.shift();
      };
    };
    const me = import.meta.filename;
    const server = spawn(process.execPath, ['--expose-gc', me, 'serve', work], { stdio: ['pipe', 'pipe', 'pipe'] });
    const fromServer = lines(server);
    const { port: p } = await fromServer();
    server.stdin.write('\n');
    const before = (await fromServer()).rss;
    const client = spawn(process.execPath, [me, 'connect', work, String(p)], { stdio: ['ignore', 'pipe', 'pipe'] });
    const fromClient = lines(client);
    const { connected } = await fromClient();
    server.stdin.write('\n');
    const after = (await fromServer()).rss;
    console.log(
      `bare node:http2 mTLS server: ${((after - before) / connected).toFixed(1)} KiB RSS per connection (${connected} connections, RSS ${(before / 1024).toFixed(1)} -> ${(after / 1024).toFixed(1)} MiB; options ${process.env.BENCH_FLOOR_SERVER_OPTIONS ?? '{}'})`,
    );
    client.kill();
    server.kill();
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
