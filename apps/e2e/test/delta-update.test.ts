import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Fleet, waitFor, waitForProgress } from '../src/index.js';
import { sha } from './helpers/digest.js';
import { freshSchema, stores } from './helpers/postgres.js';
import { tempDir } from '@svc/test-kit';
import { requireTool } from './helpers/tools.js';

/**
 * Delta updates of a file member (docs/delta-updates.md) with a real server and two real agent
 * processes: version 1 of a model is installed in full; the rollout of version 2 makes the
 * delta from what the devices run in the background job, the first wave's device installs
 * through it (bytes transferred far below the member's size), then the stored delta is
 * tampered with and the second wave's device refuses it against the signed TUF metadata and
 * downloads the full member. Both receipts stay what they were; the delivery reports beside
 * them say which path was taken.
 */
const DEVICES = ['dev-a', 'dev-b'];
const MiB = 1024 * 1024;
const havePsql = !process.env.SVC_TEST_DATABASE_URL || requireTool('psql', 'postgresql-client');
const haveZstd = requireTool('zstd', 'zstd');

interface DeliveryView {
  deltas: {
    queued: number;
    building: number;
    ready: number;
    failed: number;
    skipped: number;
    items: { state: string; length: number | null; target: string | null; error: string | null }[];
  };
  totals: { method: string; members: number; bytes_transferred: number; full_length: number; fallbacks: number }[];
  deliveries: {
    device: string;
    component: string;
    method: string;
    bytes_transferred: number;
    full_length: number;
    source_digest: string | null;
    fallback: string | null;
  }[];
  deliveries_total: number;
}

describe.skipIf(!haveZstd).each(stores().filter((s) => s === 'embedded' || havePsql))('a file member installed through a delta (%s store)', (store) => {
  let root: { dir: string; cleanup: () => Promise<void> };
  let fleet: Fleet;
  let schema: string | undefined;
  let drop = () => undefined as void;
  beforeAll(async () => {
    root = await tempDir('e2e-delta');
    let server = {};
    if (store === 'postgres') {
      const s = freshSchema();
      drop = s.drop;
      schema = s.schema;
      server = { databaseUrl: s.url, schema: s.schema };
    }
    fleet = await Fleet.start({ root: root.dir, devices: DEVICES, server });
  });
  afterAll(async () => {
    await fleet?.stop();
    drop();
    await root?.cleanup();
  });

  /** Flips one byte of a stored blob where the server keeps it: a delta tampered with at rest. */
  async function tamperBlob(digest: string): Promise<void> {
    const hex = digest.slice('sha256:'.length);
    if (store === 'embedded') {
      const file = join(root.dir, 'server', 'blobs', 'sha256', hex);
      const bytes = await readFile(file);
      bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
      await writeFile(file, bytes);
    } else {
      execFileSync('psql', [
        process.env.SVC_TEST_DATABASE_URL!,
        '-v',
        'ON_ERROR_STOP=1',
        '-q',
        '-c',
        `UPDATE "${schema}".blob_chunks SET bytes = overlay(bytes placing '\\x00ff00ff'::bytea from 9 for 4)
         WHERE idx = 0 AND blob_id = (SELECT id FROM "${schema}".blobs WHERE digest = '${digest}')`,
      ]);
    }
  }

  it('installs version 2 through a delta; a tampered delta is refused and the full member downloaded; deliveries are reported beside the receipts', async () => {
    // a 4 MiB model; version 2 changes 2% of its 4 KiB blocks, scattered
    const v1 = randomBytes(4 * MiB);
    const v2 = Buffer.from(v1);
    const blocks = v1.length / 4096;
    for (let i = 0; i < blocks * 0.02; i++) randomBytes(4096).copy(v2, Math.floor((i * blocks) / (blocks * 0.02)) * 4096);
    const a1 = await fleet.api.uploadArtifact({ name: 'detector', version: '1.0.0', kind: 'model', filename: 'detector.onnx', bytes: v1 });
    const group = await fleet.createGroup('field', DEVICES);
    const probes = [
      { name: 'model-present', type: 'command' as const, command: ['/bin/sh', '-c', 'test -s "$SVC_AGENT_DATA_DIR/placed/model/detector"'], timeout_s: 10 },
    ];

    // version 1: nothing installed before, so a full download
    const r1 = await fleet.signAndSubmit({ version: '1.0.0', components: [{ name: 'detector', artifact: a1 }], orderedGroups: [['detector']], group, probes });
    const ro1 = await fleet.startRollout(r1.release.id);
    expect(await fleet.waitSettled(ro1.transaction_id!)).toMatchObject({ state: 'committed' });
    const first = await waitFor("the first rollout's delivery reports", async () => {
      const d = await fleet.api.get<DeliveryView>(`/rollouts/${ro1.id}/delivery`);
      return d.deliveries_total === 2 ? d : undefined;
    });
    expect(first.deltas).toMatchObject({ queued: 0, ready: 0, items: [] });
    expect(first.deliveries.map((d) => [d.device, d.method, d.bytes_transferred, d.fallback])).toEqual(DEVICES.map((n) => [n, 'full', v1.length, null]));

    // version 2, one device per wave, each wave waiting for the operator
    const a2 = await fleet.api.uploadArtifact({ name: 'detector', version: '2.0.0', kind: 'model', filename: 'detector.onnx', bytes: v2 });
    const r2 = await fleet.signAndSubmit({
      version: '2.0.0',
      components: [{ name: 'detector', artifact: a2 }],
      orderedGroups: [['detector']],
      group,
      probes,
      waves: [
        // cumulative counts: one device, then both
        { count: 1, requires_approval: true },
        { count: 2, requires_approval: true },
      ],
    });
    const ro2 = await fleet.startRollout(r2.release.id);
    const txId = ro2.transaction_id!;
    // the background job builds the one delta both devices need (they run version 1)
    const ready = await waitForProgress<DeliveryView>('the delta to be built', async () => {
      const d = await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`);
      return d.deltas.queued + d.deltas.building === 0 ? { done: d } : { progress: d.deltas };
    });
    expect(ready.deltas).toMatchObject({ ready: 1, failed: 0, skipped: 0 });
    const delta = ready.deltas.items[0]!;
    expect(delta.length!).toBeLessThan(v2.length / 10);

    const detail = await fleet.api.get<{ devices: { device: string; wave: number }[] }>(`/rollouts/${ro2.id}`);
    const [early, late] = [0, 1].map((w) => detail.devices.find((d) => d.wave === w)!.device) as [string, string];
    const settledDevice = (name: string) =>
      waitFor(
        `${name}'s delivery report`,
        async () => (await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`)).deliveries.find((d) => d.device === name),
        120_000,
      );

    // wave 0: through the delta
    await fleet.api.json('POST', `/rollouts/${ro2.id}/approve`, undefined, 200);
    expect(await settledDevice(early)).toEqual({
      device: early,
      receipt_id: expect.any(String),
      component: 'detector',
      method: 'delta',
      bytes_transferred: delta.length,
      full_length: v2.length,
      source_digest: a1.digest,
      fallback: null,
      attempts: 1,
      resumes: 0,
      failure: null,
      failure_detail: null,
      reported_at: expect.any(String),
    });

    // the delta at rest no longer matches its signed hash: wave 1 refuses it and downloads in full
    const info = await fleet.api.get<{ deltas: { items: { target: string }[] } }>(`/rollouts/${ro2.id}/delivery`);
    const targets = JSON.parse(await readFile(join(fleet.dataDir(early), 'tuf', 'targets.json'), 'utf8')) as {
      signed: { targets: Record<string, { length: number; hashes: { sha256: string }; custom?: Record<string, unknown> }> };
    };
    const listed = targets.signed.targets[info.deltas.items[0]!.target]!;
    expect(listed).toMatchObject({
      length: delta.length,
      custom: { delta: { format: 'zstd-patch-from', source_digest: a1.digest, target_digest: a2.digest } },
    });
    await tamperBlob(`sha256:${listed.hashes.sha256}`);
    await fleet.api.json('POST', `/rollouts/${ro2.id}/approve`, undefined, 200);
    expect(await settledDevice(late)).toMatchObject({
      device: late,
      method: 'full',
      bytes_transferred: delta.length! + v2.length,
      source_digest: a1.digest,
      fallback: 'delta-refused',
    });
    expect(await fleet.waitSettled(txId)).toMatchObject({ state: 'committed' });

    // both devices run exactly the signed version 2, and the receipts say so as before
    for (const name of DEVICES) expect((await readFile(join(fleet.dataDir(name), 'placed', 'model', 'detector'))).equals(v2)).toBe(true);
    const result = await fleet.api.get<{ devices: { device: string; state: string; members: { previous_digest: string; resulting_digest: string }[] }[] }>(
      `/release-transactions/${txId}/result`,
    );
    for (const d of result.devices) expect(d).toMatchObject({ state: 'committed', members: [{ previous_digest: sha(v1), resulting_digest: sha(v2) }] });
    const exported = await fleet.exportReceipts(txId);
    for (const bytes of exported.receipts.values()) {
      const payload = JSON.parse(Buffer.from((JSON.parse(bytes.toString('utf8')) as { payload: string }).payload, 'base64').toString('utf8')) as Record<
        string,
        unknown
      >;
      // contracts §3: the receipt's keys are fixed; delivery travels beside it
      expect(Object.keys(payload).sort()).toEqual(
        ['tenant', 'device', 'release', 'rollout', 'candidate_digest', 'previous_digest', 'resulting_digest', 'activation', 'health', 'timestamp'].sort(),
      );
    }
    const totals = (await fleet.api.get<DeliveryView>(`/rollouts/${ro2.id}/delivery`)).totals;
    expect(totals).toEqual([
      { method: 'delta', members: 1, bytes_transferred: delta.length, full_length: v2.length, fallbacks: 0 },
      { method: 'full', members: 1, bytes_transferred: delta.length! + v2.length, full_length: v2.length, fallbacks: 1 },
    ]);
    // the agent said why it fell back
    const log = fleet.agents.get(late)!.lines.filter((l) => l.includes('delta not used'));
    expect(log.length).toBe(1);
    expect(log[0]).toContain('delta-refused');
    // each device's page: the last delivery of its member, with the rollout it came with
    for (const [name, method, bytes, fallback] of [
      [early, 'delta', delta.length!, null],
      [late, 'full', delta.length! + v2.length, 'delta-refused'],
    ] as const) {
      const view = await fleet.api.get<{ device: string; members: Record<string, unknown>[] }>(`/devices/${name}/deliveries`);
      expect(view).toEqual({
        device: name,
        members: [
          expect.objectContaining({
            component: 'detector',
            rollout_id: ro2.id,
            transaction_id: txId,
            method,
            bytes_transferred: bytes,
            full_length: v2.length,
            source_digest: a1.digest,
            fallback,
          }),
        ],
      });
    }
    expect((await fleet.api.raw('GET', '/devices/no-such-device/deliveries', undefined, 404)).status).toBe(404);
  });
});
