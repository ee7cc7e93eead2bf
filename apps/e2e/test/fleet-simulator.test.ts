import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, Proc, SIM_MAIN, startSim, type SimProcess } from '../src/index.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * The fleet simulator (`node apps/agent/dist/sim/main.js`) as its own process against a
 * server process: every simulated device enrolls with its own key, checks in over its own
 * mTLS connection, and uploads a real signed receipt for a signed rollout that the server
 * accepts and verifies.
 */
const N = 6;
const havePsql = !process.env.SVC_TEST_DATABASE_URL || requireTool('psql', 'postgresql-client');

interface ReceiptList {
  release_receipts: { id: string; device: string; transaction_id: string; release_id: string; activation: string; health: string; label: string }[];
  total: number;
}

describe.each(stores().filter((s) => s === 'embedded' || havePsql))('fleet simulator process against a server process (%s store)', (store) => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let sim: SimProcess | undefined;
  let drop = () => undefined as void;
  beforeAll(async () => {
    root = await tempDir('e2e-sim');
    let server = {};
    if (store === 'postgres') {
      const s = freshSchema();
      drop = s.drop;
      server = { databaseUrl: s.url, schema: s.schema };
    }
    // the server, an admin session and the customer release key; the devices are the simulator's
    fleet = await Fleet.start({ root: root.dir, devices: [], server });
  });
  afterAll(async () => {
    await sim?.proc.kill();
    await fleet?.stop();
    drop();
    await root?.cleanup();
  });

  it(`enrolls ${N} devices that check in; each uploads an accepted receipt for a signed rollout; the summary counts them; all online`, async () => {
    const token = await fleet.api.enrollToken('sim', N);
    sim = await startSim({
      deviceAddr: fleet.server.deviceAddr,
      serverCaFile: fleet.server.serverCaFile,
      token,
      devices: N,
      intervalS: 1,
      concurrency: 3,
      statsEveryS: 1,
    });
    expect(sim.events().find((e) => e.event === 'enrolled')).toMatchObject({ event: 'enrolled', devices: N, errors: 0 });
    // online = enrolled and checked in over the device's own mTLS connection
    await fleet.waitOnline(sim.names);

    const bytes = Buffer.from('sim\n');
    const conf = await fleet.api.uploadArtifact({ name: 'sim-conf', version: '1.0.0', kind: 'config', filename: 'sim.conf', bytes });
    const group = await fleet.createGroup('simulated', sim.names);
    const { release } = await fleet.signAndSubmit({
      version: '1.0.0',
      components: [{ name: 'sim-conf', artifact: conf, placement: { path: '/etc/sim.conf' } }],
      orderedGroups: [['sim-conf']],
      group,
      probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }],
    });
    const rollout = await fleet.startRollout(release.id);
    const txId = rollout.transaction_id!;
    expect(await fleet.waitSettled(txId)).toMatchObject({ id: txId, release_id: release.id, state: 'committed' });

    // one accepted receipt per device, read back through the REST API and verified again there
    const list = await fleet.api.get<ReceiptList>(`/release-receipts?transaction_id=${txId}&limit=100`);
    expect(list.total).toBe(N);
    expect(list.release_receipts.map((r) => r.device).sort()).toEqual(sim.names);
    for (const r of list.release_receipts) {
      expect(r).toMatchObject({ transaction_id: txId, release_id: release.id, activation: 'activated', health: 'healthy', label: 'software-key' });
      const detail = await fleet.api.get<{ verification: { verified: boolean; error: string | null; device_certificate: { subject_cn: string } | null } }>(
        `/release-receipts/${r.id}`,
      );
      expect(detail.verification).toMatchObject({ verified: true, error: null, device_certificate: { subject_cn: r.device } });
    }

    // the server commits before the device has read the answer: wait for the simulator to count it
    await sim.waitForEvent(`a stats line counting ${N} receipts`, (e) => e.event === 'stats' && e.receipts === N);
    const summary = await sim.stop();
    expect(summary).toMatchObject({ enrolled: N, receipts: N, duplicates: 0, errors: 0 });
    expect(summary.checkIns).toBeGreaterThanOrEqual(N);

    const devices = await fleet.api.get<{ devices: { name: string; status: string }[] }>(`/devices?limit=200`);
    expect(
      devices.devices
        .filter((d) => sim!.names.includes(d.name))
        .map((d) => [d.name, d.status])
        .sort(),
    ).toEqual(sim.names.map((n) => [n, 'online']));
  });

  it('exits 1 naming how many devices enrolled when the token is refused; the summary is still printed', async () => {
    const args = ['--server', fleet.server.deviceAddr, '--server-ca', fleet.server.serverCaFile, '--token', 'svce_not-a-token', '--devices', '3'];
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
    // with no device enrolled there is nothing to run: the simulator stops before --duration
    const proc = new Proc('sim-bad-token', SIM_MAIN, [...args, '--prefix', 'sim-bad', '--duration', '20'], env);
    const exit = await proc.exited;
    expect(exit, proc.tail()).toEqual({ code: 1, signal: null });
    expect(proc.lines.filter((l) => l.startsWith('svc-sim: '))).toEqual([
      expect.stringMatching(/^svc-sim: enrolled 0 of 3 devices \(last error: enroll sim-bad-\d{6}: .+\)$/),
    ]);
    const summary = proc.lines.find((l) => l.startsWith('{"event":"summary"'));
    expect(JSON.parse(summary ?? '{}')).toMatchObject({ event: 'summary', enrolled: 0, errors: 3 });
  });

  it('exits 1 when a device call failed, unless --max-errors tolerates it', async () => {
    const run = async (prefix: string, maxErrors: number | undefined): Promise<SimProcess> => {
      const s = await startSim({
        deviceAddr: fleet.server.deviceAddr,
        serverCaFile: fleet.server.serverCaFile,
        token: await fleet.api.enrollToken(prefix, 2),
        devices: 2,
        prefix,
        intervalS: 1,
        statsEveryS: 1,
        ...(maxErrors === undefined ? {} : { maxErrors }),
      });
      await fleet.waitOnline(s.names);
      // a decommissioned device's calls are refused: the simulator counts an error per turn
      await fleet.api.raw('DELETE', `/devices/${s.names[0]}`);
      await s.waitForEvent('a stats line counting an error', (e) => e.event === 'stats' && typeof e.errors === 'number' && e.errors >= 1);
      return s;
    };
    sim = await run('sim-strict', undefined);
    await expect(sim.stop()).rejects.toThrow(/sim exited \(1\)/);
    expect(sim.proc.lines.filter((l) => l.startsWith('svc-sim: '))).toEqual([
      expect.stringMatching(/^svc-sim: \d+ errors \(--max-errors 0; last error: sim-strict-000000: .+\)$/),
    ]);
    sim = await run('sim-tolerant', 1_000_000);
    const summary = await sim.stop();
    expect(summary).toMatchObject({ enrolled: 2 });
    expect(summary.errors).toBeGreaterThanOrEqual(1);
    expect(sim.proc.lines.filter((l) => l.startsWith('svc-sim: '))).toEqual([]);
  });
});
