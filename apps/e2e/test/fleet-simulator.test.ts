import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, startSim, type SimProcess } from '../src/index.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempRoot } from './helpers/temp.js';
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
    root = await tempRoot('sim');
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
    expect(sim.events()[0]).toMatchObject({ event: 'enrolled', devices: N, errors: 0 });
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
});
