import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import type { UploadReceiptResponse } from '@svc/device-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AcceptedReceipt } from '../../src/resources/release-receipts/commands.js';
import type { BatchAuditEntry } from '../../src/resources/unit-of-work.js';
import {
  enrollDevice,
  enrollFleetWithRollout,
  publishSignedRollout,
  refusal,
  startChannelFixture,
  unary,
  type ChannelFixture,
  type EnrolledDevice,
  type PublishedRelease,
} from '../fixtures/device-channel.js';
import { availableDrivers } from '../helpers/store.js';
import { acceptanceState, checkConsistent, digestOf, signedReceipt } from '../fixtures/receipt-batches.js';

/**
 * Receipts that arrive together are appended together (device-channel/receipt-pipeline.ts):
 * the calls below are made in one turn of the event loop, so they form one batch, and the
 * shared `accepted_at` of their rows (the batch's clock) shows it. Every refusal and duplicate
 * rule of spec §2.3 rule 5 holds per receipt inside the batch.
 */
describe.each(availableDrivers())('receipt batches on %s', (driver) => {
  let f: ChannelFixture;
  let rel: PublishedRelease;
  const devs: EnrolledDevice[] = [];
  let stranger: EnrolledDevice;
  // fault injection: the audit row of this device's receipt throws, failing its whole batch
  let faultDevice: string | undefined;

  beforeAll(async () => {
    f = await startChannelFixture(driver, {
      hooks: {
        unitOfWork: {
          afterAudit: (e: BatchAuditEntry) => {
            if (faultDevice !== undefined && e.actor?.name === `device:${faultDevice}`)
              throw new Error(`injected failure after the audit row of ${faultDevice}`);
          },
        },
      },
    });
    for (let i = 0; i < 6; i++) devs.push(await enrollDevice(f, `batch-${i}`));
    stranger = await enrollDevice(f, 'batch-stranger');
    rel = await publishSignedRollout(f, {
      devices: devs.map((d) => d.name),
      bytes: Buffer.from('batch-config\n'),
      placementPath: '/etc/edge/batch.conf',
      waves: [
        { name: 'first', percent: 50 },
        { name: 'rest', percent: 100 },
      ],
    });
  });
  afterAll(async () => {
    for (const d of [...devs, stranger]) d?.clients.close();
    await f?.dispose();
  });

  const accept = (dev: EnrolledDevice, bytes: Uint8Array, over: { as?: EnrolledDevice } = {}) => {
    const conn = over.as ?? dev;
    return f.ctx.receipts.accept({ tenantId: f.tenantId, deviceName: conn.name, certDer: conn.certDer }, bytes, new Date());
  };
  const state = () => acceptanceState(f.t.store.db, rel.deploymentId);
  const code = (r: PromiseSettledResult<AcceptedReceipt>) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'ok');
  const message = (r: PromiseSettledResult<AcceptedReceipt>) => (r.status === 'rejected' ? (r.reason as Error).message : '');

  it('a refusal inside a batch stores nothing for that receipt and does not disturb the others', async () => {
    const [d0, d1, d2, d3] = devs as [EnrolledDevice, EnrolledDevice, EnrolledDevice, EnrolledDevice];
    const good = [signedReceipt(f.tenantId, rel, d0), signedReceipt(f.tenantId, rel, d1), signedReceipt(f.tenantId, rel, d2)];
    const notAssigned = signedReceipt(f.tenantId, rel, stranger);
    const secondForD2 = signedReceipt(f.tenantId, rel, d2, { health: 'not-checked', timestamp: '2030-01-01T00:00:00Z' });
    const results = await Promise.allSettled([
      accept(d0, good[0]!),
      accept(d1, good[1]!),
      // the stranger is enrolled, its receipt verifies, but it is not in the rollout
      accept(stranger, notAssigned),
      // device 3 uploads device 2's receipt over its own connection: refused before the batch
      accept(d2, good[2]!, { as: d3 }),
      accept(d2, good[2]!),
      // a second, different receipt for device 2 in the same batch: device 2 is terminal by then
      accept(d2, secondForD2),
    ]);
    expect(results.map(code)).toEqual(['ok', 'ok', 'RECEIPT_UNEXPECTED', 'CERT_IDENTITY_MISMATCH', 'ok', 'RECEIPT_UNEXPECTED']);
    expect(message(results[2])).toBe(`device: ${stranger.name} is not assigned to rollout ${rel.rolloutId}`);
    expect(message(results[5])).toBe(`device: ${d2.name} already has a terminal receipt (committed) for this deployment`);
    expect(results.slice(0, 2).map((r) => (r as PromiseFulfilledResult<AcceptedReceipt>).value.duplicate)).toEqual([false, false]);

    const s = await state();
    checkConsistent(s);
    expect(s.receipts.map((r) => [r.device_name, r.envelope_digest])).toEqual([
      [d0.name, digestOf(good[0]!)],
      [d1.name, digestOf(good[1]!)],
      [d2.name, digestOf(good[2]!)],
    ]);
    expect(s.receipts.map((r) => r.id).sort()).toEqual(
      [results[0], results[1], results[4]].map((r) => (r as PromiseFulfilledResult<AcceptedReceipt>).value.receipt_id).sort(),
    );
    // one batch: one transaction, one clock
    expect(new Set(s.receipts.map((r) => r.accepted_at.getTime())).size).toBe(1);
    // nothing of a refused receipt anywhere
    expect(s.allAudits).toBe(3);
    const stored = await f.t.store.db.selectFrom('release_receipts').select('envelope_digest').execute();
    expect(stored.map((r) => r.envelope_digest)).not.toContain(digestOf(notAssigned));
    expect(stored.map((r) => r.envelope_digest)).not.toContain(digestOf(secondForD2));
    expect(s.devices.filter((d) => d.state !== 'pending').map((d) => d.device_name)).toEqual([d0.name, d1.name, d2.name]);
    expect(s.counters).toEqual({ n_committed: 3, n_rolled_back: 0, n_failed: 0, n_installed: 0 });
  });

  it('identical bytes twice in one batch: one row, the other reported as its duplicate', async () => {
    const d3 = devs[3]!;
    const bytes = signedReceipt(f.tenantId, rel, d3);
    const [a, b] = await Promise.all([accept(d3, bytes), accept(d3, bytes)]);
    expect([a.duplicate, b.duplicate].sort()).toEqual([false, true]);
    expect(a.receipt_id).toBe(b.receipt_id);
    const s = await state();
    checkConsistent(s);
    expect(s.receipts.filter((r) => r.device_name === d3.name)).toHaveLength(1);
    expect(s.counters.n_committed).toBe(4);
    // and again later, over the wire: still the same row, still a duplicate
    const again = await unary<UploadReceiptResponse>((cb) => d3.clients.device.uploadReceipt({ envelope: bytes }, cb));
    expect(again).toEqual({ receiptId: a.receipt_id, duplicate: true });
  });

  it('a batch that fails as a whole is retried one receipt per transaction: only the failing receipt is refused', async () => {
    const [d4, d5] = [devs[4]!, devs[5]!];
    const b4 = signedReceipt(f.tenantId, rel, d4, {
      activation: 'rolled-back',
      health: 'unhealthy',
      previous_digest: rel.digest,
      resulting_digest: rel.digest,
    });
    const b5 = signedReceipt(f.tenantId, rel, d5);
    faultDevice = d4.name;
    let results: PromiseSettledResult<AcceptedReceipt>[];
    try {
      results = await Promise.allSettled([accept(d4, b4), accept(d5, b5)]);
    } finally {
      faultDevice = undefined;
    }
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
    let s = await state();
    checkConsistent(s);
    expect(s.receipts.map((r) => r.device_name)).not.toContain(d4.name);
    expect(s.devices.find((d) => d.device_name === d4.name)?.state).toBe('pending');

    // the same bytes once the fault is gone: accepted, and the rollout completes
    const ok = await unary<UploadReceiptResponse>((cb) => d4.clients.device.uploadReceipt({ envelope: b4 }, cb));
    expect(ok.duplicate).toBe(false);
    s = await state();
    checkConsistent(s);
    expect(s.counters).toEqual({ n_committed: 5, n_rolled_back: 1, n_failed: 0, n_installed: 0 });
    expect(s.waves.map((w) => [w.state, w.done])).toEqual([
      ['done', 3],
      ['done', 3],
    ]);
  });

  it('many devices uploading at once over their own mTLS connections: each accepted once, refusals answered alone', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `burst-${String(i).padStart(2, '0')}`);
    const { devs: fleet, rel: burst } = await enrollFleetWithRollout(f, names, {
      bytes: Buffer.from('burst-config\n'),
      placementPath: '/etc/edge/burst.conf',
      version: '2.0.0',
      waves: [
        { name: 'a', percent: 25 },
        { name: 'b', percent: 100 },
      ],
    });
    try {
      const receipts = fleet.map((d) => signedReceipt(f.tenantId, burst, d));
      const upload = (d: EnrolledDevice, bytes: Buffer) => unary<UploadReceiptResponse>((cb) => d.clients.device.uploadReceipt({ envelope: bytes }, cb));
      // every device twice (the second is a duplicate), and one device's receipt over another's connection
      const calls = [...fleet.map((d, i) => upload(d, receipts[i]!)), ...fleet.map((d, i) => upload(d, receipts[i]!))];
      const forged = refusal(upload(fleet[1]!, receipts[0]!));
      const out = await Promise.all(calls);
      expect((await forged).code).not.toBe(status.OK);
      for (let i = 0; i < fleet.length; i++) {
        expect([out[i]!.duplicate, out[i + fleet.length]!.duplicate].sort()).toEqual([false, true]);
        expect(out[i]!.receiptId).toBe(out[i + fleet.length]!.receiptId);
      }
      const s = await acceptanceState(f.t.store.db, burst.deploymentId);
      checkConsistent(s);
      expect(s.receipts).toHaveLength(fleet.length);
      expect(s.counters.n_committed).toBe(fleet.length);
      expect(s.waves.map((w) => w.state)).toEqual(['done', 'done']);
    } finally {
      for (const d of fleet) d.clients.close();
    }
  });
  it('what each device runs follows the receipts of a batch (migration 0044: one upsert per statement)', async () => {
    const db = f.t.store.db;
    const stored = await db.selectFrom('release_receipts').select(['id', 'device_name']).where('deployment_id', '=', rel.deploymentId).execute();
    expect(stored.length).toBeGreaterThan(1);
    const running = await db
      .selectFrom('vuln_device_software')
      .select(['device_name', 'component', 'digest', 'source', 'source_id'])
      .where('tenant_id', '=', f.tenantId)
      .where(
        'device_name',
        'in',
        stored.map((r) => r.device_name),
      )
      .execute();
    expect(running.map((r) => ({ ...r })).sort((a, b) => a.device_name.localeCompare(b.device_name))).toEqual(
      stored
        .map((r) => ({ device_name: r.device_name, component: 'edge-conf', digest: rel.digest, source: 'receipt', source_id: r.id }))
        .sort((a, b) => a.device_name.localeCompare(b.device_name)),
    );
  });

  it('several receipts naming one device and component in one statement: the latest accepted counts, then the one inserted last', async () => {
    const db = f.t.store.db;
    const [model] = await db.selectFrom('release_receipts').selectAll().where('deployment_id', '=', rel.deploymentId).limit(1).execute();
    const at = (s: string) => new Date(s);
    const copy = (n: number, acceptedAt: Date, digest: string) => ({
      ...model!,
      id: randomUUID(),
      envelope_digest: `sha256:${String(n).repeat(64).slice(0, 64)}` as const,
      device_name: 'statement-probe',
      payload: JSON.stringify({ ...(model!.payload as object), resulting_digest: digest }),
      accepted_at: acceptedAt,
    });
    const later = `sha256:${'b'.repeat(64)}`;
    const last = `sha256:${'c'.repeat(64)}`;
    // rolled back: release_receipts is append-only (migration 0006)
    await db
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto('release_receipts')
          .values([copy(1, at('2030-01-02T00:00:00Z'), later), copy(2, at('2030-01-01T00:00:00Z'), `sha256:${'a'.repeat(64)}`)])
          .execute();
        const one = await trx.selectFrom('vuln_device_software').select('digest').where('device_name', '=', 'statement-probe').executeTakeFirstOrThrow();
        expect(one.digest).toBe(later);
        await trx
          .insertInto('release_receipts')
          .values([copy(3, at('2030-01-03T00:00:00Z'), `sha256:${'d'.repeat(64)}`), copy(4, at('2030-01-03T00:00:00Z'), last)])
          .execute();
        const two = await trx.selectFrom('vuln_device_software').select('digest').where('device_name', '=', 'statement-probe').executeTakeFirstOrThrow();
        expect(two.digest).toBe(last);
        throw new Error('rollback');
      })
      .catch((e: Error) => {
        if (e.message !== 'rollback') throw e;
      });
  });
});
