import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN,
  Api,
  createHostNetwork,
  deploymentHaproxyConfig,
  Fleet,
  freePort,
  haproxyStats,
  netnsUnavailable,
  REPO_ROOT,
  startHaproxyConfig,
  startServer,
  startSim,
  waitForProgress,
  type HostNetwork,
  type Proc,
  type RolloutRecord,
  type ServerOptions,
  type ServerProcess,
  type SimProcess,
} from '../src/index.js';
import { freshSchema } from './helpers/postgres.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * Three server hosts, each a network namespace of its own (`ip netns`, a veth to one bridge)
 * with its own empty data directory and its own copy of the KEK file; nothing on disk is
 * shared between them. PostgreSQL and HAProxy are in the root namespace, reached over the
 * bridge. The simulated devices are a fourth namespace: 300 devices in connect-per-check-in
 * mode dial HAProxy's device port (TCP), the test reaches the API through HAProxy's HTTP
 * frontend or a host directly. A signed rollout in three waves; mid-rollout host B's server
 * is SIGKILLed and host C's restarted. Every receipt is accepted exactly once and the waves
 * complete; an artifact uploaded through A is installed byte-identical by a device served by
 * C; an enrollment token made on B enrolls a device through A; a decommission through C is
 * refused on A within the documented bound (docs/device-channel.md, Device authentication).
 *
 * PostgreSQL listens on 127.0.0.1 only: rather than change the machine's configuration
 * (listen_addresses, pg_hba.conf), HAProxy forwards a TCP port on the bridge to it
 * (the `postgres` frontend below, a test-only addition to the deployment's configuration).
 */
const N = 300;
const pgUrl = process.env.SVC_TEST_DATABASE_URL;
const inCi = process.env.CI === 'true';
if (!pgUrl && inCi) throw new Error('hosts-netns: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('SKIPPING hosts-netns: SVC_TEST_DATABASE_URL not set; the hosts share PostgreSQL');
const netnsProblem = pgUrl === undefined ? undefined : netnsUnavailable();
if (netnsProblem !== undefined && inCi) throw new Error(`hosts-netns: network namespaces are required in CI: ${netnsProblem}`);
if (netnsProblem !== undefined) console.warn(`SKIPPING hosts-netns: network namespaces not permitted here (${netnsProblem})`);
const ready = pgUrl !== undefined && netnsProblem === undefined && requireTool('haproxy') && requireTool('psql', 'postgresql-client');

/** The example addresses of docs/server.md's HAProxy configuration. */
const DOC_EXAMPLE = {
  statsSocket: '/run/haproxy/admin.sock',
  devicesBind: '0.0.0.0:8443',
  apiBind: '0.0.0.0:8080',
  servers: ['a', 'b', 'c'].map((name, i) => ({ name, device: `10.0.0.${11 + i}:8443`, http: `10.0.0.${11 + i}:8080` })),
};

describe('the deployment documentation', () => {
  it('shows the HAProxy configuration the multi-host test runs, for its example addresses', async () => {
    const doc = await readFile(join(REPO_ROOT, 'docs', 'server.md'), 'utf8');
    expect(doc).toContain(`\`\`\`\n${deploymentHaproxyConfig(DOC_EXAMPLE)}\`\`\``);
  });
});

describe.skipIf(!ready)(`three server hosts in network namespaces, ${N} devices connecting per check-in, one host killed and one restarted mid-rollout`, () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let net: HostNetwork | undefined;
  let haproxy: Proc | undefined;
  let fleet: Fleet | undefined;
  const servers: Record<'b' | 'c', ServerProcess | undefined> = { b: undefined, c: undefined };
  let sim: SimProcess | undefined;
  let schema: ReturnType<typeof freshSchema> | undefined;
  let statsSocket = '';
  let devicesAddr = '';
  let apiUrl = '';
  const hostOptions: Record<string, Omit<ServerOptions, 'admin'>> = {};
  const psql = (query: string): string => execFileSync('psql', [pgUrl!, '-At', '-c', query], { encoding: 'utf8' }).trim();
  const dataDir = (h: string) => join(root.dir, 'hosts', h, 'data');

  beforeAll(async () => {
    root = await tempDir('e2e-hosts');
    schema = freshSchema();
    net = createHostNetwork(['a', 'b', 'c', 'd']);
    const gw = net.gateway;
    statsSocket = join(root.dir, 'haproxy.sock');
    devicesAddr = `${gw}:${await freePort()}`;
    const apiAddr = `${gw}:${await freePort()}`;
    apiUrl = `http://${apiAddr}`;
    const pgPort = await freePort();
    const target = new URL(pgUrl!);
    const config =
      deploymentHaproxyConfig({
        statsSocket,
        devicesBind: devicesAddr,
        apiBind: apiAddr,
        servers: ['a', 'b', 'c'].map((h) => ({ name: h, device: `${net!.hosts[h]!.addr}:8443`, http: `${net!.hosts[h]!.addr}:8080` })),
      }) +
      [
        '',
        'frontend postgres',
        '  mode tcp',
        `  bind ${gw}:${pgPort}`,
        '  default_backend postgres',
        '',
        'backend postgres',
        '  mode tcp',
        `  server pg ${target.host}`,
        '',
      ].join('\n');
    await mkdir(root.dir, { recursive: true });
    haproxy = await startHaproxyConfig({ dir: root.dir, config, statsSocket });

    // one KEK, a copy of it per host, outside that host's data directory
    const kek = randomBytes(32);
    const hostDb = new URL(pgUrl!);
    hostDb.host = `${gw}:${pgPort}`;
    for (const h of ['a', 'b', 'c']) {
      await mkdir(dataDir(h), { recursive: true });
      const kekFile = join(root.dir, 'hosts', h, 'kek');
      await writeFile(kekFile, kek, { mode: 0o600 });
      hostOptions[h] = {
        dataDir: dataDir(h),
        databaseUrl: hostDb.href,
        schema: schema.schema,
        kekFile,
        netns: net.hosts[h]!.ns,
        host: net.hosts[h]!.addr,
        httpPort: 8080,
        devicePort: 8443,
        env: { SVC_BLOB_STORE: 'postgres', SVC_DATABASE_POOL_SIZE: '4' },
      };
    }
    // host A migrates the schema and makes the keys; B and C start on what it stored
    fleet = await Fleet.start({ root: join(root.dir, 'fleet'), devices: [], server: hostOptions.a! });
    const started = await Promise.allSettled([startServer({ ...hostOptions.b!, admin: ADMIN }), startServer({ ...hostOptions.c!, admin: ADMIN })]);
    // kept before any failure is thrown, so afterAll stops the one that did start
    [servers.b, servers.c] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
    for (const r of started) if (r.status === 'rejected') throw r.reason;
    await waitForProgress(
      'HAProxy to see every server up',
      async () => {
        const up = (await haproxyStats(statsSocket)).filter((s) => s.backend !== 'postgres' && s.status === 'UP').length;
        return up === 6 ? { done: up } : { progress: up };
      },
      15_000,
      200,
    );
  }, 240_000);

  afterAll(async () => {
    await sim?.proc.kill();
    await fleet?.stop().catch(() => undefined);
    for (const s of Object.values(servers)) await s?.proc.kill();
    await haproxy?.kill();
    net?.destroy();
    schema?.drop();
    await root?.cleanup();
  });

  const api = async (url: string) => {
    const a = new Api(url);
    await a.login(ADMIN.email, ADMIN.password);
    return a;
  };

  it('accepts every receipt once across a killed and a restarted host; tokens, artifacts and revocations cross hosts', async () => {
    const a = fleet!;
    const [viaLb, onB, onC] = await Promise.all([api(apiUrl), api(servers.b!.url), api(servers.c!.url)]);
    const devNs = net!.hosts.d!.ns;
    const hostOf = (h: 'a' | 'b' | 'c') => (h === 'a' ? a.server : servers[h]!);

    // an enrollment token made on B enrolls a real agent that dials A's device port directly
    const tokenB = await onB.enrollToken('made-on-b', 1);
    const edge = 'edge-1';
    await a.startAgent(edge, { token: tokenB, deviceAddr: a.server.deviceAddr, netns: devNs });
    await a.waitOnline([edge]);

    // the fleet, through HAProxy's device port; each turn connects, idle connections close after 1 s
    sim = await startSim({
      deviceAddr: devicesAddr,
      serverCaFile: a.server.serverCaFile,
      token: await viaLb.enrollToken('hosts', N),
      devices: N,
      intervalS: 2,
      connection: 'per-check-in',
      idleCloseS: 1,
      concurrency: 8,
      netns: devNs,
      maxErrors: Number.MAX_SAFE_INTEGER,
    });
    expect(sim.events().find((e) => e.event === 'enrolled')).toMatchObject({ event: 'enrolled', devices: N, errors: 0 });
    await waitForProgress<number>(
      `${N + 1} devices online`,
      async () => {
        const online = (await viaLb.get<{ counts: { online: number } }>('/devices?limit=1')).counts.online;
        return online === N + 1 ? { done: online } : { progress: online };
      },
      30_000,
      500,
    );
    // every host serves devices: the per-check-in connections spread over the three
    await waitForProgress(
      `each host to have served ${N / 10} device connections`,
      async () => {
        const totals = (await haproxyStats(statsSocket)).filter((s) => s.backend === 'device-channel').map((s) => s.total);
        return totals.every((t) => t > N / 10) ? { done: totals } : { progress: totals };
      },
      15_000,
      250,
    );

    // an artifact uploaded through A, installed by the agent now served by C
    await a.agents.get(edge)!.stop();
    await a.startAgent(edge, { deviceAddr: hostOf('c').deviceAddr, netns: devNs });
    const bytes = randomBytes(256 * 1024 + 17);
    const art = await a.api.uploadArtifact({ name: 'tuning', version: '1.0.0', kind: 'config', filename: 'tuning.bin', bytes });
    const edgeGroup = await a.createGroup('edge', [edge]);
    const legacy = await onC.json<RolloutRecord>('POST', '/rollouts', { artifact_id: art.id, group_id: edgeGroup.id }, 201);
    await waitForProgress(
      'the artifact to be installed through C',
      async () => {
        const r = await onC.get<{ progress: { installed: number; failed?: number } }>(`/rollouts/${legacy.id}`);
        return r.progress.installed === 1 ? { done: r } : { progress: r.progress };
      },
      30_000,
    );
    expect(await readFile(join(a.dataDir(edge), 'placed', 'config', 'tuning'))).toEqual(bytes);

    // the signed rollout in three waves to the simulated fleet
    const conf = await a.api.uploadArtifact({ name: 'hosts-conf', version: '1.0.0', kind: 'config', filename: 'hosts.conf', bytes: Buffer.from('hosts\n') });
    const group = await a.createGroup('hosts', sim.names);
    const { release } = await a.signAndSubmit({
      version: '1.0.0',
      components: [{ name: 'hosts-conf', artifact: conf, placement: { path: '/etc/hosts.conf' } }],
      orderedGroups: [['hosts-conf']],
      group,
      probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }],
      waves: [
        { name: 'canary', percent: 10 },
        { name: 'half', percent: 50 },
        { name: 'all', percent: 100 },
      ],
    });
    const rollout = await a.startRollout(release.id);
    const txId = rollout.transaction_id!;
    const receiptCount = () => Number(psql(`SELECT count(*) FROM "${schema!.schema}".release_receipts WHERE deployment_id = '${txId}'`));

    // mid-rollout: B's server dies without any cleanup, then C's is stopped and started again
    await sim.waitForEvent('the first receipts', (e) => e.event === 'stats' && typeof e.receipts === 'number' && e.receipts >= 1, 60_000);
    const killedAt = new Date();
    await servers.b!.proc.kill();
    const atKill = receiptCount();
    expect(atKill).toBeLessThan(N / 2);
    await servers.c!.stop();
    servers.c = await startServer({ ...hostOptions.c!, admin: ADMIN });
    const atRestart = receiptCount();
    console.log(`hosts-netns: ${atKill} receipts when B was killed, ${atRestart} when C was back`);

    expect(await a.waitSettled(txId, 60_000)).toMatchObject({ id: txId, state: 'committed' });
    const [receipts, devices] = psql(
      `SELECT count(*), count(DISTINCT device_name) FROM "${schema!.schema}".release_receipts WHERE deployment_id = '${txId}'`,
    ).split('|');
    expect(Number(receipts)).toBe(N);
    expect(Number(devices)).toBe(N);
    const detail = await viaLb.get<{ waves: { name: string; size: number; done: number; failed: number }[] }>(`/rollouts/${rollout.id}`);
    expect(detail.waves.map((w) => [w.name, w.size, w.done, w.failed])).toEqual([
      ['canary', N / 10, N / 10, 0],
      ['half', N / 2 - N / 10, N / 2 - N / 10, 0],
      ['all', N / 2, N / 2, 0],
    ]);
    await waitForProgress<number>(
      'every simulated device to check in after the kill',
      () => {
        const seen = Number(psql(`SELECT count(*) FROM "${schema!.schema}".devices WHERE name LIKE 'sim-%' AND last_seen > '${killedAt.toISOString()}'`));
        return seen === N ? { done: seen } : { progress: seen };
      },
      30_000,
      500,
    );
    const after = Object.fromEntries((await haproxyStats(statsSocket)).filter((s) => s.backend === 'device-channel').map((s) => [s.server, s]));
    expect([after.a!.status, after.b!.status, after.c!.status]).toEqual(['UP', 'DOWN', 'UP']);

    // a receipt whose answer was lost with a server is sent again and answered as a duplicate
    await sim.waitForEvent(`a stats line counting ${N} receipts`, (e) => e.event === 'stats' && typeof e.receipts === 'number' && e.receipts >= N, 30_000);
    const summary = await sim.stop();
    sim = undefined;
    console.log(`hosts-netns: simulator ${JSON.stringify(summary)}`);
    expect(summary.enrolled).toBe(N);
    expect(summary.receipts - summary.duplicates).toBeLessThanOrEqual(N);
    // connect per check-in: far more connections than devices
    expect((summary as unknown as { connects: number }).connects).toBeGreaterThan(2 * N);

    // a decommission through C is honoured by A, which had the device's authentication cached
    await a.agents.get(edge)!.stop();
    const agent = await a.startAgent(edge, { deviceAddr: a.server.deviceAddr, netns: devNs });
    const restartedAt = new Date();
    await waitForProgress(
      `${edge} to check in through A`,
      async () => {
        const d = await a.api.get<{ last_seen: string | null }>(`/devices/${edge}`);
        return d.last_seen !== null && new Date(d.last_seen) > restartedAt ? { done: d } : { progress: d.last_seen };
      },
      15_000,
    );
    const from = agent.lines.length;
    await onC.json('DELETE', `/devices/${edge}`, undefined, 204);
    const decommissionedAt = Date.now();
    await agent.waitForLine(/"msg":"check-in failed".*decommissioned|decommissioned.*"msg":"check-in failed"/, 20_000, from);
    const refusedAfterMs = Date.now() - decommissionedAt;
    console.log(`hosts-netns: decommission through C refused on A after ${refusedAfterMs} ms`);
    // the documented bound (a listener's answer is at most 10 s behind the database) plus the
    // device's next check-in (1 s interval, spread 10% either way)
    expect(refusedAfterMs).toBeLessThan(10_000 + 1_100);

    // no host keeps anything another needs: a data directory holds only the public server CA certificate
    for (const h of ['a', 'b', 'c']) expect(await listFiles(dataDir(h))).toEqual(['ca/server/ca.pem']);
  });
});

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}
