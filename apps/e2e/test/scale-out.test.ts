import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, Fleet, startHaproxy, startServer, startSim, waitForProgress, type Balancer, type ServerProcess, type SimProcess } from '../src/index.js';
import { freshSchema } from './helpers/postgres.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * Scale-out: three server processes (dist/main.js) on one PostgreSQL schema and one shared
 * data dir, behind HAProxy in TCP mode (the device channel is mTLS end to end). The fleet
 * simulator's devices spread over the three; a signed rollout in three waves to all of them;
 * one process is killed outright mid-rollout. Every device reconnects to another process,
 * every receipt is accepted exactly once, and the waves complete in order although receipts
 * for the same deployment arrive at different processes. The full-size run (10k devices, 1-3
 * processes, throughput per process count) is in apps/server/bench/channel.mjs.
 */
const N = 300;
const pgUrl = process.env.SVC_TEST_DATABASE_URL;
if (!pgUrl && process.env.CI === 'true') throw new Error('scale-out: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('SKIPPING scale-out: SVC_TEST_DATABASE_URL not set; several server processes need PostgreSQL');
const ready = pgUrl !== undefined && requireTool('haproxy') && requireTool('psql', 'postgresql-client');

describe.skipIf(!ready)(`three server processes behind HAProxy, ${N} simulated devices, one process killed mid-rollout`, () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  const others: ServerProcess[] = [];
  let lb: Balancer | undefined;
  let sim: SimProcess | undefined;
  let schema: ReturnType<typeof freshSchema>;
  const psql = (query: string): string => execFileSync('psql', [pgUrl!, '-At', '-c', query], { encoding: 'utf8' }).trim();

  beforeAll(async () => {
    root = await tempDir('e2e-scale-out');
    schema = freshSchema();
    // server A migrates the schema; B and C share its database and data dir (blobs, CA keys, TUF repository)
    fleet = await Fleet.start({ root: root.dir, devices: [], server: { databaseUrl: schema.url, schema: schema.schema } });
    for (let i = 0; i < 2; i++) {
      others.push(await startServer({ dataDir: join(root.dir, 'server'), admin: ADMIN, databaseUrl: schema.url, schema: schema.schema }));
    }
    lb = await startHaproxy({ dir: root.dir, backends: [fleet.server.deviceAddr, ...others.map((s) => s.deviceAddr)] });
  }, 180_000);
  afterAll(async () => {
    await sim?.proc.kill();
    await lb?.stop();
    for (const s of others) await s.proc.kill();
    await fleet?.stop();
    schema?.drop();
    await root?.cleanup();
  });

  it('spreads the devices, accepts every receipt exactly once across a killed process, and completes the waves', async () => {
    const token = await fleet.api.enrollToken('scale-out', N);
    // killing a server fails the calls in flight on its connections and the devices' next ones
    // until they reconnect: any number of errors is expected, the assertions below judge the run
    sim = await startSim({
      deviceAddr: lb!.addr,
      serverCaFile: fleet.server.serverCaFile,
      token,
      devices: N,
      intervalS: 1,
      concurrency: 8,
      maxErrors: Number.MAX_SAFE_INTEGER,
    });
    expect(sim.events().find((e) => e.event === 'enrolled')).toMatchObject({ event: 'enrolled', devices: N, errors: 0 });
    await waitForProgress<number>(
      `${N} devices online`,
      async () => {
        const online = (await fleet.api.get<{ counts: { online: number } }>('/devices?limit=1')).counts.online;
        return online === N ? { done: online } : { progress: online };
      },
      60_000,
      500,
    );
    // every device holds its own mTLS connection, and every process holds a share of them
    const spread = await waitForProgress<Awaited<ReturnType<Balancer['stats']>>>(
      `${N} device connections through HAProxy`,
      async () => {
        const s = await lb!.stats();
        const current = s.reduce((n, b) => n + b.current, 0);
        return current >= N ? { done: s } : { progress: current };
      },
      60_000,
      500,
    );
    expect(spread.map((s) => s.status)).toEqual(['UP', 'UP', 'UP']);
    for (const s of spread) expect(s.current).toBeGreaterThan(N / 10);

    const conf = await fleet.api.uploadArtifact({
      name: 'scale-conf',
      version: '1.0.0',
      kind: 'config',
      filename: 'scale.conf',
      bytes: Buffer.from('scale\n'),
    });
    const group = await fleet.createGroup('scale-out', sim.names);
    const { release } = await fleet.signAndSubmit({
      version: '1.0.0',
      components: [{ name: 'scale-conf', artifact: conf, placement: { path: '/etc/scale.conf' } }],
      orderedGroups: [['scale-conf']],
      group,
      probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }],
      waves: [
        { name: 'canary', percent: 10 },
        { name: 'half', percent: 50 },
        { name: 'all', percent: 100 },
      ],
    });
    const rollout = await fleet.startRollout(release.id);
    const txId = rollout.transaction_id!;

    // mid-rollout: the first receipts are in, most are not; then server B dies without any cleanup
    await sim.waitForEvent('the first receipts', (e) => e.event === 'stats' && typeof e.receipts === 'number' && e.receipts >= 1, 120_000);
    const killedAt = new Date();
    await others[0]!.proc.kill();
    const atKill = Number(psql(`SELECT count(*) FROM "${schema.schema}".release_receipts WHERE deployment_id = '${txId}'`));
    expect(atKill).toBeLessThan(N / 2);

    // a stall says where it stood: the simulator's last counters, the balancer, devices gone quiet
    const settled = await fleet.waitSettled(txId, 120_000).catch(async (e: unknown) => {
      const quiet = psql(
        `SELECT count(*) FILTER (WHERE last_seen < now() - interval '30 seconds') || ' quiet of ' || count(*) FROM "${schema.schema}".devices`,
      );
      throw new Error(
        `${(e as Error).message}\nsimulator: ${JSON.stringify(
          sim!
            .events()
            .filter((l) => l.event === 'stats')
            .at(-1),
        )}\n` + `haproxy: ${JSON.stringify(await lb!.stats())}\ndevices: ${quiet}`,
        { cause: e },
      );
    });
    expect(settled).toMatchObject({ id: txId, state: 'committed' });
    // exactly one accepted receipt per device, none twice
    const [receipts, devices] = psql(
      `SELECT count(*), count(DISTINCT device_name) FROM "${schema.schema}".release_receipts WHERE deployment_id = '${txId}'`,
    ).split('|');
    expect(Number(receipts)).toBe(N);
    expect(Number(devices)).toBe(N);
    const detail = await fleet.api.get<{ waves: { name: string; size: number; done: number; failed: number; state: string }[] }>(`/rollouts/${rollout.id}`);
    expect(detail.waves.map((w) => [w.name, w.size, w.done, w.failed])).toEqual([
      ['canary', N / 10, N / 10, 0],
      ['half', N / 2 - N / 10, N / 2 - N / 10, 0],
      ['all', N / 2, N / 2, 0],
    ]);

    // the killed process's devices came back through the others: every device checked in since
    await waitForProgress<number>(
      'every device to check in after the kill',
      () => {
        const seen = Number(psql(`SELECT count(*) FROM "${schema.schema}".devices WHERE last_seen > '${killedAt.toISOString()}'`));
        return seen === N ? { done: seen } : { progress: seen };
      },
      60_000,
      1000,
    );
    const after = await lb!.stats();
    expect(after[1]!.status).toBe('DOWN');
    expect(after[0]!.current + after[2]!.current).toBeGreaterThanOrEqual(N);

    // a device whose receipt answer was lost with the killed process sends it again on a later
    // turn, which may come after its first check-in through another process: wait for those
    await sim.waitForEvent(`a stats line counting ${N} receipts`, (e) => e.event === 'stats' && typeof e.receipts === 'number' && e.receipts >= N, 60_000);
    const summary = await sim.stop();
    sim = undefined;
    console.log(`scale-out: ${atKill} receipts accepted when B was killed; simulator ${JSON.stringify(summary)}`);
    // a receipt whose answer was lost with the killed process is sent again and recognized as a duplicate
    expect(summary.enrolled).toBe(N);
    expect(summary.receipts - summary.duplicates).toBeLessThanOrEqual(N);
    expect(summary.receipts).toBeGreaterThanOrEqual(N);
  });
});
