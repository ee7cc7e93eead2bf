import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, PRODUCT, svcRelease, type ArtifactRecord } from '../src/index.js';
import { sha } from './helpers/digest.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempRoot } from './helpers/temp.js';
import { requireTool } from './helpers/tools.js';

/**
 * Issue 5, scenario 1: a two-component transaction (config, then model) signed with the
 * real CLI, submitted and rolled out through the REST API, committed by two real agent
 * processes; the receipts exported and one verified offline with `svc-release verify-receipt`.
 */
const DEVICES = ['dev-a', 'dev-b'];
const havePsql = !process.env.SVC_TEST_DATABASE_URL || requireTool('psql', 'postgresql-client');

describe.each(stores().filter((s) => s === 'embedded' || havePsql))('two-component transaction commits on two agents (%s store)', (store) => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let drop = () => undefined as void;
  beforeAll(async () => {
    root = await tempRoot('commit');
    let server = {};
    if (store === 'postgres') {
      const s = freshSchema();
      drop = s.drop;
      server = { databaseUrl: s.url, schema: s.schema };
    }
    fleet = await Fleet.start({ root: root.dir, devices: DEVICES, server });
  });
  afterAll(async () => {
    await fleet?.stop();
    drop();
    await root?.cleanup();
  });

  it('commits both members in order, places the files, and exports receipts that verify offline', async () => {
    const configBytes = Buffer.from('listen = "0.0.0.0:9000"\nthreshold = 0.7\n');
    const modelBytes = Buffer.from('model-weights-v1\n'.repeat(512));
    const config = await fleet.api.uploadArtifact({ name: 'app-config', version: '1.0.0', kind: 'config', filename: 'app.toml', bytes: configBytes });
    const model = await fleet.api.uploadArtifact({ name: 'detector', version: '1.0.0', kind: 'model', filename: 'detector.onnx', bytes: modelBytes });
    expect(config).toMatchObject({ digest: sha(configBytes), length: configBytes.length, kind: 'config' });
    const group = await fleet.createGroup('field', DEVICES);

    const { release } = await fleet.signAndSubmit({
      version: '1.0.0',
      components: [{ name: 'app-config', artifact: config }, { name: 'detector', artifact: model as ArtifactRecord }],
      orderedGroups: [['app-config'], ['detector']],
      group,
      // a real probe on the device: the config it depends on is in place
      probes: [{ name: 'config-present', type: 'command', command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/app-config"'], timeout_s: 10 }],
    });
    const rollout = await fleet.startRollout(release.id);
    expect(rollout).toMatchObject({ kind: 'signed', release_id: release.id });
    const txId = rollout.transaction_id!;
    expect(rollout.rollouts?.map((m) => [m.component, m.group, m.position])).toEqual([['app-config', 0, 0], ['detector', 1, 1]]);

    const tx = await fleet.waitSettled(txId);
    expect(tx).toMatchObject({ id: txId, release_id: release.id, member_count: 2, state: 'committed' });

    // deterministic result manifest: every device, every member with its position
    const result = await fleet.api.get<{ transaction_id: string; devices: { device: string; state: string; receipt_envelope_digest: string; members: Record<string, unknown>[] }[] }>(`/release-transactions/${txId}/result`);
    expect(result.transaction_id).toBe(txId);
    expect(result.devices.map((d) => [d.device, d.state])).toEqual(DEVICES.map((d) => [d, 'committed']));
    for (const d of result.devices) {
      expect(d.members).toEqual([
        expect.objectContaining({ component: 'app-config', artifact_id: config.id, digest: config.digest, group: 0, position: 0, verdict: 'committed', previous_digest: null, resulting_digest: config.digest }),
        expect.objectContaining({ component: 'detector', artifact_id: model.id, digest: model.digest, group: 1, position: 1, verdict: 'committed', previous_digest: null, resulting_digest: model.digest }),
      ]);
    }

    // the files are in place on each "device"
    for (const name of DEVICES) {
      expect(await readFile(join(fleet.dataDir(name), 'placed', 'config', 'app-config'))).toEqual(configBytes);
      expect(await readFile(join(fleet.dataDir(name), 'placed', 'model', 'detector'))).toEqual(modelBytes);
    }

    // spec 4: the export is a tar of the exact accepted envelopes plus an index
    const exported = await fleet.exportReceipts(txId);
    expect(exported.index.map((l) => l.device).sort()).toEqual(DEVICES);
    expect(exported.index.every((l) => l.label === 'software-key' && l.transaction_id === txId)).toBe(true);
    expect(exported.receipts.size).toBe(2);
    const line = exported.index.find((l) => l.device === 'dev-a')!;
    const bytes = exported.receipts.get(line.file as string)!;
    // the file is named after the envelope digest the result manifest references
    const digest = result.devices.find((d) => d.device === 'dev-a')!.receipt_envelope_digest;
    expect(line).toMatchObject({ envelope_digest: digest, file: `receipts/${digest.slice('sha256:'.length)}.dsse.json` });
    expect(bytes.length).toBeGreaterThan(500);
    const receiptFile = join(root.dir, 'dev-a.receipt.json');
    await writeFile(receiptFile, bytes);

    const ok = await svcRelease(['verify-receipt', receiptFile, '--ca', fleet.deviceCaFile('dev-a'), '--tenant', fleet.tenant, '--device', 'dev-a', '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    const verified = JSON.parse(ok.stdout) as Record<string, unknown>;
    expect(verified).toMatchObject({ device: 'dev-a', tenant: fleet.tenant, product: PRODUCT, version: '1.0.0', activation: 'activated', health: 'healthy' });
    expect(verified.release_envelope_digest).toBe(release.envelope_digest);
    expect(JSON.stringify(verified.transaction)).toContain(txId);
    // the same receipt does not pass as another device's
    const wrong = await svcRelease(['verify-receipt', receiptFile, '--ca', fleet.deviceCaFile('dev-a'), '--tenant', fleet.tenant, '--device', 'dev-b']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(/^refused: /);
  });
});
