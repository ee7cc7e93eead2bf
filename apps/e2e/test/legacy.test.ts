import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, readTar, waitFor, type RolloutRecord } from '../src/index.js';
import { tempDir } from '@svc/test-kit';

/**
 * (spec §2.2 rule 3, 2.3.6): a legacy rollout (artifact + group, no
 * release pointer) still runs on a real agent that has the release settings, and stays
 * labelled legacy with device-reported evidence: no signed receipt, no release transaction.
 */
const DEVICE = 'dev-legacy';

describe('legacy rollout on a real agent', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  beforeAll(async () => {
    root = await tempDir('e2e-legacy');
    fleet = await Fleet.start({ root: root.dir, devices: [DEVICE] });
  });
  afterAll(async () => {
    await fleet?.stop();
    await root?.cleanup();
  });

  it('installs the artifact and reports device-reported status only', async () => {
    const bytes = Buffer.from('legacy tuning table v1\n');
    const art = await fleet.api.uploadArtifact({ name: 'tuning', version: '1.0.0', kind: 'config', filename: 'tuning.cfg', bytes });
    const group = await fleet.createGroup('legacy-field', [DEVICE]);
    const started = await fleet.api.json<RolloutRecord>('POST', '/rollouts', { artifact_id: art.id, group_id: group.id }, 201);
    expect(started).toMatchObject({ kind: 'legacy', release_id: null, transaction_id: null });

    const detail = await waitFor(
      'the legacy rollout to be reported',
      async () => {
        const r = await fleet.api.get<RolloutRecord & { devices: { device: string; state: string }[]; progress: { installed: number } }>(
          `/rollouts/${started.id}`,
        );
        return r.progress.installed === 1 ? r : undefined;
      },
      60_000,
    );
    expect(detail).toMatchObject({ kind: 'legacy', evidence: 'device-reported', release_id: null, transaction_id: null });
    expect(detail.devices).toEqual([expect.objectContaining({ device: DEVICE, state: 'installed' })]);
    // the file really is in place (legacy artifacts have no signed placement: the agent's default)
    expect(await readFile(join(fleet.dataDir(DEVICE), 'placed', 'config', 'tuning'))).toEqual(bytes);

    // never upgraded to signed evidence: no transaction, no receipt
    const txs = await fleet.api.get<{ total: number }>('/release-transactions');
    expect(txs.total).toBe(0);
    const res = await fleet.api.raw('GET', '/release-receipts/export', undefined, 200);
    const entries = readTar(Buffer.from(await res.arrayBuffer()));
    // the tenant's device CA certificates (for offline verification) and an empty index
    expect(entries.map((e) => e.name)).toEqual(['device-cas.pem', 'index.jsonl']);
    expect(entries[1]!.bytes.length).toBe(0);
    const list = await fleet.api.get<{ rollouts: { id: string; kind: string; evidence: string }[] }>('/rollouts?kind=legacy');
    expect(list.rollouts).toEqual([expect.objectContaining({ id: started.id, kind: 'legacy', evidence: 'device-reported' })]);
  });
});
