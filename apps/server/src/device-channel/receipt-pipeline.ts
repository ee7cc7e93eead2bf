/**
 * Group commit of device receipts. Each `UploadReceipt` call is verified on arrival, outside any
 * transaction (`verifyUpload`: signatures, chain, connection certificate, the signed rollout);
 * a refusal there answers that call alone. Verified receipts queue per tenant; one batch per
 * tenant is written at a time, and everything that arrived while it was being written becomes
 * the next batch: one transaction, a few multi-row statements, one audit row per receipt, the
 * deployment's counters and waves updated once (resources/release-receipts/commands.ts). A
 * caller is answered only after its batch committed, so an OK receipt is stored; a batch that
 * fails as a whole (a lost connection, a deadlock with another process) is retried one receipt
 * per transaction, so each caller still gets its own answer.
 */
import type { Kysely } from 'kysely';
import { appendReceipts, verifyUpload, type AcceptedReceipt, type VerifiedUpload } from '../resources/release-receipts/commands.js';
import { runUnitOfWork, systemActor, type UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import type { DeviceCaStore } from './device-ca.js';

interface Waiting {
  v: VerifiedUpload;
  resolve(r: AcceptedReceipt): void;
  reject(e: unknown): void;
}

export interface ReceiptPipelineOptions {
  db: Kysely<Database>;
  cas: DeviceCaStore;
  now: () => Date;
  hooks?: UnitOfWorkHooks | undefined;
  /** Receipts per transaction at most. */
  maxBatch?: number;
}

export class ReceiptPipeline {
  private readonly queues = new Map<string, Waiting[]>();
  private readonly maxBatch: number;

  constructor(private readonly o: ReceiptPipelineOptions) {
    this.maxBatch = o.maxBatch ?? 500;
  }

  /** Verifies one uploaded receipt, then resolves once its batch committed (or rejects with its refusal). */
  async accept(peer: { tenantId: string; deviceName: string; certDer: Uint8Array }, envelopeBytes: Uint8Array, now: Date): Promise<AcceptedReceipt> {
    const caDer = await this.o.cas.certificateDer(peer.tenantId);
    const v = await verifyUpload(this.o.db, {
      tenant: peer.tenantId,
      deviceName: peer.deviceName,
      connectionCertificateDer: peer.certDer,
      envelopeBytes,
      now,
      caDer,
    });
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(peer.tenantId);
      if (queue !== undefined) {
        queue.push({ v, resolve, reject });
        return;
      }
      this.queues.set(peer.tenantId, [{ v, resolve, reject }]);
      // receipts verified in the same turn of the event loop join the first batch
      setImmediate(() => void this.drain(peer.tenantId));
    });
  }

  /** Writes the tenant's queue batch by batch until it is empty; the queue's presence marks a writer running. */
  private async drain(tenant: string): Promise<void> {
    const queue = this.queues.get(tenant)!;
    try {
      while (queue.length > 0) await this.commit(tenant, queue.splice(0, this.maxBatch));
    } catch (e) {
      for (const w of queue.splice(0)) w.reject(e);
    } finally {
      this.queues.delete(tenant);
    }
  }

  private async commit(tenant: string, batch: Waiting[]): Promise<void> {
    let outcomes;
    try {
      outcomes = await runUnitOfWork(this.o.db, { tenant, actor: systemActor('receipts'), now: this.o.now(), hooks: this.o.hooks }, (uow) =>
        appendReceipts(
          uow,
          batch.map((w) => w.v),
        ),
      );
    } catch (e) {
      if (batch.length === 1) batch[0]!.reject(e);
      else for (const w of batch) await this.commit(tenant, [w]);
      return;
    }
    batch.forEach((w, k) => {
      const out = outcomes[k]!;
      if ('ok' in out) w.resolve(out.ok);
      else w.reject(out.refused);
    });
  }
}
