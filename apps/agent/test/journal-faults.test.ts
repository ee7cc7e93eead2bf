import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Journal, Orchestrator, nodeJournalIo, type JournalIo } from '../src/index.js';
import { assignmentFor } from './helpers/agent-fixture.js';
import { FakeMemberDriver, type DriverCall } from './helpers/fake-member-driver.js';
import { MemoryFetcher, PRODUCT, PROFILE, TENANT, buildRelease, makeDevice, type DeviceFixture } from './helpers/release-fixture.js';
import { tempDir } from './helpers/tools.js';

/**
 * In-process version of the crash table for speed, driven by journal write faults: the
 * Nth append fails (torn bytes + EIO). The run stops at the last durable state; a fresh
 * agent on the same disk resumes and converges to a true receipt.
 */
const root = await tempDir();
const device: DeviceFixture = await makeDevice(join(root.dir, 'pki'));
afterAll(() => root.cleanup());

const rel = buildRelease({
  components: [
    { name: 'model-a', kind: 'model', content: 'a-v2' },
    { name: 'model-b', kind: 'model', content: 'b-v2' },
  ],
  groups: [['model-a'], ['model-b']],
});

function faultyIo(failAt: number): { io: JournalIo; appends: () => number } {
  let n = 0;
  return {
    appends: () => n,
    io: {
      ...nodeJournalIo,
      async append(path, bytes) {
        if (++n === failAt) {
          await nodeJournalIo.append(path, bytes.subarray(0, Math.floor(bytes.length / 3)));
          throw Object.assign(new Error('EIO'), { code: 'EIO' });
        }
        return nodeJournalIo.append(path, bytes);
      },
    },
  };
}

function agent(dataDir: string, journal: Journal, driver: FakeMemberDriver) {
  return new Orchestrator({
    dataDir,
    journal,
    release: { settings: { tenant: TENANT, product: PRODUCT, profile: PROFILE, trustDir: '/x' }, trustedKeys: [rel.publicKey] },
    fetcher: new MemoryFetcher(rel.targets),
    drivers: { model: driver },
    device,
    health: { check: async () => ({ verdict: 'healthy', results: [] }) },
  });
}

/** Appends of a run without faults: the rows below fail each of them in turn. */
async function cleanRunAppends(): Promise<number> {
  const dataDir = join(root.dir, 'clean');
  const f = faultyIo(-1);
  const out = await agent(dataDir, await Journal.open(join(dataDir, 'j'), { io: f.io }), new FakeMemberDriver('model')).apply(assignmentFor(rel));
  if (out.status !== 'done' || out.activation !== 'activated') throw new Error(`the clean run did not commit: ${JSON.stringify(out)}`);
  return f.appends();
}

// Counted while the file is collected, not by an earlier test: every row exists whatever runs.
const total = await cleanRunAppends();
const digests = (rel.payload.components as { digest: string }[]).map((c) => c.digest);

describe('journal write faults at every append', () => {
  it('a clean run journals every step (more than 10 appends)', () => {
    expect(total).toBeGreaterThan(10);
  });

  it.each(Array.from({ length: total }, (_, i) => i + 1))(
    'append %i fails: stops durable, resumes, converges with both members committed and v2 live',
    async (failAt) => {
      const dataDir = join(root.dir, `fault-${failAt}`);
      const calls: DriverCall[] = [];
      const driver = new FakeMemberDriver('model', calls); // the "device": survives the restart
      const first = await agent(dataDir, await Journal.open(join(dataDir, 'j'), { io: faultyIo(failAt).io }), driver).apply(assignmentFor(rel));
      let outcome = first;
      if (first.status !== 'done') {
        expect(first).toMatchObject({ status: 'retry-later' });
        const restarted = agent(dataDir, await Journal.open(join(dataDir, 'j')), driver);
        const resumed = await restarted.resume();
        outcome = resumed.at(-1) ?? (await restarted.apply(assignmentFor(rel)));
        if (outcome.status !== 'done') outcome = await restarted.apply(assignmentFor(rel));
      }
      expect(outcome).toMatchObject({ status: 'done', activation: 'activated' });
      expect([...driver.live.values()]).toEqual(digests);
      // an interrupted activation was rolled back before the retry: every rollback precedes a re-activation
      const ops = calls.map((c) => `${c.op}:${c.component}`);
      const firstRollback = ops.indexOf('rollback:model-a');
      if (firstRollback >= 0) expect(ops.lastIndexOf('activate:model-a')).toBeGreaterThan(firstRollback);
    },
  );
});
