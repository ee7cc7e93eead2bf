import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHealthPolicy, probesForGroup, runHealth, isAgentError } from '../src/index.js';
import { assignmentFor, makeOrchestrator } from './helpers/agent-fixture.js';
import { FakeMemberDriver } from './helpers/fake-member-driver.js';
import { MemoryFetcher, buildRelease, makeDevice } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

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
        { name: 'hangs', type: 'command', command: ['sleep', '5'], timeout_s: 1 },
      ],
    });
    const started = Date.now();
    const r = await runHealth(policy);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r.verdict).toBe('unhealthy');
    expect(r.results).toEqual([
      { name: 'ok', ok: true, detail: 'exit 0' },
      { name: 'fails', ok: false, detail: 'exit 1' },
      { name: 'hangs', ok: false, detail: 'timed out after 1s' },
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
          { name: 'slow', type: 'http', url: `${base}/slow`, expect_status: 200, timeout_s: 1 },
        ],
      }),
    );
    expect(r.results).toEqual([
      { name: 'ok', ok: true, detail: 'status 200' },
      { name: 'down', ok: false, detail: 'status 503' },
      { name: 'slow', ok: false, detail: 'timed out after 1s' },
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

describe('health probes scoped to an activation group', () => {
  const probe = (name: string, group?: number) => ({ name, type: 'command', command: ['true'], timeout_s: 1, ...(group !== undefined ? { group } : {}) });

  it('a probe runs once its group is live and after every later group; an unscoped one after every group', () => {
    const policy = parseHealthPolicy({ probes: [probe('all'), probe('g0', 0), probe('g1', 1), probe('g2', 2)] }, { groups: 3 });
    const names = (g: number) => probesForGroup(policy, g).probes.map((p) => p.name);
    expect(names(0)).toEqual(['all', 'g0']);
    expect(names(1)).toEqual(['all', 'g0', 'g1']);
    expect(names(2)).toEqual(['all', 'g0', 'g1', 'g2']);
  });

  it('refuses a group the release does not have, naming the probe', () => {
    for (const group of [2, -1, 0.5, '1']) {
      let err: unknown;
      try {
        parseHealthPolicy({ probes: [probe('ok'), { ...probe('late'), group }] }, { groups: 2 });
      } catch (e) {
        err = e;
      }
      expect(isAgentError(err, 'HEALTH_POLICY_INVALID')).toBe(true);
      expect((err as Error).message).toMatch(/health\.probes\[1\]\.group: /);
    }
  });

  it("the orchestrator runs each group's probes for real: a group-1 probe never runs before group 1 is live", async () => {
    const root = await tempDir();
    try {
      const log = join(root.dir, 'probes.log');
      const record = (name: string) => ['sh', '-c', `echo ${name} >> '${log}'`];
      const rel = buildRelease({
        components: [
          { name: 'model-a', kind: 'model', content: 'a-v2' },
          { name: 'model-b', kind: 'model', content: 'b-v2' },
        ],
        groups: [['model-a'], ['model-b']],
        probes: [
          { name: 'every', type: 'command', command: record('every'), timeout_s: 5 },
          { name: 'first', type: 'command', command: record('first'), timeout_s: 5, group: 0 },
          { name: 'second', type: 'command', command: record('second'), timeout_s: 5, group: 1 },
        ],
      });
      const { orchestrator } = await makeOrchestrator({
        dataDir: join(root.dir, 'agent'),
        device: await makeDevice(join(root.dir, 'pki')),
        drivers: { model: new FakeMemberDriver('model') },
        fetcher: new MemoryFetcher(rel.targets),
        trustedKeys: [rel.publicKey],
      });
      expect(await orchestrator.apply(assignmentFor(rel))).toMatchObject({ status: 'done', activation: 'activated', health: 'healthy' });
      // after group 0: every, first; after group 1: every, first, second
      expect((await readFile(log, 'utf8')).trim().split('\n')).toEqual(['every', 'first', 'every', 'first', 'second']);
    } finally {
      await root.cleanup();
    }
  });
});
