import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, svcRelease, type HealthProbe } from '../src/index.js';
import { readJournal, rollbackOrder } from './helpers/journal.js';
import { tempDir } from '@svc/test-kit';

/**
 * v1 (config + model) commits; v2's second activation group fails the
 * release's health probe on the device, so the agent restores both members in reverse
 * order (spec §3 rule 4): v1 files are live again, the transaction shows `rolled back`, and the
 * signed receipt says so.
 */
const DEVICE = 'dev-r';
// Healthy unless the live model says BROKEN (a missing model is fine: group 1 not yet active).
const PROBE: HealthProbe = {
  name: 'model-sane',
  type: 'command',
  command: ['/bin/sh', '-c', '! grep -q BROKEN "$SVC_AGENT_DATA_DIR/placed/model/detector" 2>/dev/null'],
  timeout_s: 10,
};

describe('a failing health probe in the second group rolls the whole transaction back', () => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  beforeAll(async () => {
    root = await tempDir('e2e-rollback');
    fleet = await Fleet.start({ root: root.dir, devices: [DEVICE] });
  });
  afterAll(async () => {
    await fleet?.stop();
    await root?.cleanup();
  });

  async function release(version: string, config: string, model: string) {
    const c = await fleet.api.uploadArtifact({ name: 'app-config', version, kind: 'config', filename: 'app.toml', bytes: Buffer.from(config) });
    const m = await fleet.api.uploadArtifact({ name: 'detector', version, kind: 'model', filename: 'detector.onnx', bytes: Buffer.from(model) });
    const group = await fleet.createGroup(`field-${version.replace(/\./g, '-')}`, [DEVICE]);
    const { release } = await fleet.signAndSubmit({
      version,
      components: [
        { name: 'app-config', artifact: c },
        { name: 'detector', artifact: m },
      ],
      orderedGroups: [['app-config'], ['detector']],
      group,
      probes: [PROBE],
    });
    const rollout = await fleet.startRollout(release.id);
    return { c, m, txId: rollout.transaction_id! };
  }

  it('restores v1 of both members in reverse order and reports rolled back', async () => {
    const placed = (kind: string, name: string) => readFile(join(fleet.dataDir(DEVICE), 'placed', kind, name), 'utf8');
    const v1 = await release('1.0.0', 'config v1\n', 'model v1\n');
    expect((await fleet.waitSettled(v1.txId)).state).toBe('committed');
    expect([await placed('config', 'app-config'), await placed('model', 'detector')]).toEqual(['config v1\n', 'model v1\n']);

    const v2 = await release('2.0.0', 'config v2\n', 'model v2 BROKEN\n');
    const tx = await fleet.waitSettled(v2.txId);
    expect(tx).toMatchObject({ state: 'rolled back', member_count: 2 });
    // the previous version of every member is live again
    expect([await placed('config', 'app-config'), await placed('model', 'detector')]).toEqual(['config v1\n', 'model v1\n']);
    // spec §3 rule 4: reverse activation order (the model, activated last, is restored first)
    expect(rollbackOrder(await readJournal(fleet.dataDir(DEVICE)), v2.txId)).toEqual(['detector', 'app-config']);

    const result = await fleet.api.get<{ devices: { device: string; state: string; members: Record<string, unknown>[] }[] }>(
      `/release-transactions/${v2.txId}/result`,
    );
    expect(result.devices).toHaveLength(1);
    expect(result.devices[0]).toMatchObject({ device: DEVICE, state: 'rolled back' });
    expect(result.devices[0]!.members).toEqual([
      expect.objectContaining({ component: 'app-config', position: 0, verdict: 'rolled-back', previous_digest: v1.c.digest, resulting_digest: v1.c.digest }),
      expect.objectContaining({ component: 'detector', position: 1, verdict: 'rolled-back', previous_digest: v1.m.digest, resulting_digest: v1.m.digest }),
    ]);

    // the device-signed receipt states the same, verified offline
    const { receipts, index } = await fleet.exportReceipts(v2.txId);
    expect(index).toHaveLength(1);
    const file = join(root.dir, 'rolled-back.receipt.json');
    await writeFile(file, receipts.get(index[0]!.file as string)!);
    const out = await svcRelease(['verify-receipt', file, '--ca', fleet.deviceCaFile(DEVICE), '--tenant', fleet.tenant, '--device', DEVICE, '--json']);
    expect(out.status, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ activation: 'rolled-back', health: 'unhealthy', version: '2.0.0', members: 2 });
    // the CLI has checked the signature over these payload bytes; the member verdicts are in them
    const envelope = JSON.parse(await readFile(file, 'utf8')) as { payload: string };
    const payload = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as { members: { component: string; verdict: string }[] };
    expect(payload.members.map((m) => [m.component, m.verdict])).toEqual([
      ['app-config', 'rolled-back'],
      ['detector', 'rolled-back'],
    ]);
  });
});
