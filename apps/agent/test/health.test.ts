import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHealthPolicy, runHealth, isAgentError } from '../src/index.js';

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/slow') return void setTimeout(() => res.end('late'), 3000);
    res.statusCode = req.url === '/ok' ? 200 : 503;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('health probes', () => {
  it('command probes: exit 0 healthy, exit 1 unhealthy, a hung command is killed at its timeout', async () => {
    const policy = parseHealthPolicy({
      probes: [
        { name: 'ok', type: 'command', command: ['sh', '-c', 'exit 0'], timeout_s: 5 },
        { name: 'fails', type: 'command', command: ['sh', '-c', 'exit 1'], timeout_s: 5 },
        { name: 'hangs', type: 'command', command: ['sleep', '5'], timeout_s: 0.3 },
      ],
    });
    const started = Date.now();
    const r = await runHealth(policy);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r.verdict).toBe('unhealthy');
    expect(r.results).toEqual([
      { name: 'ok', ok: true, detail: 'exit 0' },
      { name: 'fails', ok: false, detail: 'exit 1' },
      { name: 'hangs', ok: false, detail: 'timed out after 0.3s' },
    ]);
  });

  it('a missing command is unhealthy, not a crash', async () => {
    const r = await runHealth(parseHealthPolicy({ probes: [{ name: 'nope', type: 'command', command: ['/nonexistent/probe'], timeout_s: 1 }] }));
    expect(r.verdict).toBe('unhealthy');
    expect(r.results[0]!.detail).toMatch(/cannot run/);
  });

  it('http probes against a real loopback server: status match, mismatch and timeout', async () => {
    const r = await runHealth(
      parseHealthPolicy({
        probes: [
          { name: 'ok', type: 'http', url: `${base}/ok`, expect_status: 200, timeout_s: 2 },
          { name: 'down', type: 'http', url: `${base}/down`, expect_status: 200, timeout_s: 2 },
          { name: 'slow', type: 'http', url: `${base}/slow`, expect_status: 200, timeout_s: 0.3 },
        ],
      }),
    );
    expect(r.results).toEqual([
      { name: 'ok', ok: true, detail: 'status 200' },
      { name: 'down', ok: false, detail: 'status 503' },
      { name: 'slow', ok: false, detail: 'timed out after 0.3s' },
    ]);
  });

  it('rejects a bad policy naming every bad field', () => {
    let err: unknown;
    try {
      parseHealthPolicy({
        probes: [
          { name: 'a', type: 'command', command: [], timeout_s: 1 },
          { name: 'a', type: 'http', url: 'ftp://x', timeout_s: 0 },
          { name: 'c', type: 'smoke' },
        ],
      });
    } catch (e) {
      err = e;
    }
    expect(isAgentError(err, 'HEALTH_POLICY_INVALID')).toBe(true);
    const msg = (err as Error).message;
    for (const f of ['health.probes[0].command', 'health.probes[1].name', 'health.probes[1].timeout_s', 'health.probes[1].url', 'health.probes[2].type']) {
      expect(msg).toContain(f);
    }
  });
});
