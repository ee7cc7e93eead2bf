import { X509Certificate } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, PRODUCT, svcRelease, waitFor } from '../src/index.js';
import { sha } from './helpers/digest.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * A two-component transaction (config, then model) signed with the
 * real CLI, submitted and rolled out through the REST API, committed by two real agent
 * processes (identity stored at enrollment, TUF metadata through the device channel, the receipt
 * out of the outbox once accepted, nothing left to do afterwards); the receipts exported and one
 * verified offline with `svc-release verify-receipt`.
 */
const DEVICES = ['dev-a', 'dev-b'];
const havePsql = !process.env.SVC_TEST_DATABASE_URL || requireTool('psql', 'postgresql-client');

describe.each(stores().filter((s) => s === 'embedded' || havePsql))('two-component transaction commits on two agents (%s store)', (store) => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let drop = () => undefined as void;
  beforeAll(async () => {
    root = await tempDir('e2e-commit');
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

  it('commits both members in order, places the files, empties the outbox once the receipts are accepted, and exports receipts that verify offline', async () => {
    const configBytes = Buffer.from('listen = "0.0.0.0:9000"\nthreshold = 0.7\n');
    const modelBytes = Buffer.from('model-weights-v1\n'.repeat(512));
    const config = await fleet.api.uploadArtifact({ name: 'app-config', version: '1.0.0', kind: 'config', filename: 'app.toml', bytes: configBytes });
    const model = await fleet.api.uploadArtifact({ name: 'detector', version: '1.0.0', kind: 'model', filename: 'detector.onnx', bytes: modelBytes });
    expect(config).toMatchObject({ digest: sha(configBytes), length: configBytes.length, kind: 'config' });
    const group = await fleet.createGroup('field', DEVICES);

    const { release } = await fleet.signAndSubmit({
      version: '1.0.0',
      components: [
        { name: 'app-config', artifact: config },
        { name: 'detector', artifact: model },
      ],
      orderedGroups: [['app-config'], ['detector']],
      group,
      // a real probe on the device: the config it depends on is in place
      probes: [
        { name: 'config-present', type: 'command', command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/config/app-config"'], timeout_s: 10 },
      ],
    });
    const rollout = await fleet.startRollout(release.id);
    expect(rollout).toMatchObject({ kind: 'signed', release_id: release.id });
    const txId = rollout.transaction_id!;
    expect(rollout.rollouts?.map((m) => [m.component, m.group, m.position])).toEqual([
      ['app-config', 0, 0],
      ['detector', 1, 1],
    ]);

    const tx = await fleet.waitSettled(txId);
    expect(tx).toMatchObject({ id: txId, release_id: release.id, member_count: 2, state: 'committed' });

    // deterministic result manifest: every device, every member with its position
    const result = await fleet.api.get<{
      transaction_id: string;
      devices: { device: string; state: string; receipt_envelope_digest: string; members: Record<string, unknown>[] }[];
    }>(`/release-transactions/${txId}/result`);
    expect(result.transaction_id).toBe(txId);
    expect(result.devices.map((d) => [d.device, d.state])).toEqual(DEVICES.map((d) => [d, 'committed']));
    for (const d of result.devices) {
      expect(d.members).toEqual([
        expect.objectContaining({
          component: 'app-config',
          artifact_id: config.id,
          digest: config.digest,
          group: 0,
          position: 0,
          verdict: 'committed',
          previous_digest: null,
          resulting_digest: config.digest,
        }),
        expect.objectContaining({
          component: 'detector',
          artifact_id: model.id,
          digest: model.digest,
          group: 1,
          position: 1,
          verdict: 'committed',
          previous_digest: null,
          resulting_digest: model.digest,
        }),
      ]);
    }

    // the files are in place on each "device"
    for (const name of DEVICES) {
      expect(await readFile(join(fleet.dataDir(name), 'placed', 'config', 'app-config'))).toEqual(configBytes);
      expect(await readFile(join(fleet.dataDir(name), 'placed', 'model', 'detector'))).toEqual(modelBytes);
    }

    // each agent end to end: its identity on disk, TUF over the device channel, the receipt out of the outbox
    const accepted = await fleet.api.get<{ release_receipts: { id: string; device: string }[]; total: number }>(`/release-receipts?transaction_id=${txId}`);
    expect(accepted.release_receipts.map((r) => r.device).sort()).toEqual(DEVICES);
    const lastSeen = async (name: string) =>
      (await fleet.api.get<{ devices: { name: string; last_seen: string }[] }>(`/devices?limit=200`)).devices.find((d) => d.name === name)!.last_seen;
    for (const name of DEVICES) {
      const data = fleet.dataDir(name);
      // the identity made on the device at enrollment: key 0600, its tenant and name, and the
      // certificate the server verified the receipt against
      expect((await stat(join(data, 'identity', 'device.key'))).mode & 0o777).toBe(0o600);
      expect(JSON.parse(await readFile(join(data, 'identity', 'identity.json'), 'utf8'))).toEqual({ tenant_id: fleet.tenant, device_name: name });
      const cert = new X509Certificate(await readFile(join(data, 'identity', 'device.pem')));
      const detail = await fleet.api.get<{ verification: { verified: boolean; device_certificate: { fingerprint: string } | null } }>(
        `/release-receipts/${accepted.release_receipts.find((r) => r.device === name)!.id}`,
      );
      expect(detail.verification).toMatchObject({ verified: true, device_certificate: { fingerprint: sha(cert.raw) } });
      // TUF through RepositoryService: the agent knows only the gRPC address, and its tuf-js
      // client persisted the verified targets metadata naming both members' bytes
      const targets = (JSON.parse(await readFile(join(data, 'tuf', 'targets.json'), 'utf8')) as { signed: { targets: Record<string, unknown> } }).signed
        .targets;
      for (const a of [config, model])
        expect(targets[a.target]).toEqual(expect.objectContaining({ length: a.length, hashes: { sha256: a.digest.slice('sha256:'.length) } }));
      // the receipt leaves the outbox only once the server acknowledged it
      await waitFor(`${name}'s outbox to empty`, async () => (await readdir(join(data, 'outbox'))).every((f) => !f.endsWith('.receipt.json')));
      // two more check-ins later (the second starts after the first is handled; 10 s each, so the
      // agent follows the server's 1 s interval, not its own 60 s default): nothing left to do
      const seen = await lastSeen(name);
      const next = await waitFor(`a check-in of ${name} after ${seen}`, async () => ((await lastSeen(name)) > seen ? lastSeen(name) : undefined), 10_000);
      await waitFor(`a check-in of ${name} after ${next}`, async () => (await lastSeen(name)) > next, 10_000);
      const log = fleet.agents
        .get(name)!
        .lines.filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; [k: string]: unknown });
      expect(log.filter((l) => l.msg === 'assignment').map((l) => l.status)).toEqual(['done']);
      expect(log.filter((l) => l.msg === 'outbox')).toEqual([expect.objectContaining({ uploaded: [txId], refused: [], pending: [] })]);
      expect(log.filter((l) => l.msg === 'assignment not applied' || l.level === 'error')).toEqual([]);
    }

    // spec §4: the export is a tar of the exact accepted envelopes plus an index
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
