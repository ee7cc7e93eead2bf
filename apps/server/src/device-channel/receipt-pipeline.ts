/**
 * Group commit of device receipts. Each `UploadReceipt` call is verified on arrival, outside any
 * transaction (`verifyUpload`: signatures, chain, connection certificate, the signed rollout);
 * a refusal there answers that call alone. Verified receipts queue per tenant; up to `writers`
 * batches per tenant are written at a time (two by default: one transaction's round trips
 * overlap the other's), and everything that arrived meanwhile becomes the next batch: one
 * transaction, a few multi-row statements, one audit row per receipt, the deployment's counters
 * and waves updated once (resources/release-receipts/commands.ts). A
 * caller is answered only after its batch committed, so an OK receipt is stored; a batch that
 * fails as a whole (a lost connection, a deadlock with another process) is retried one receipt
 * per transaction, so each caller still gets its own answer.
 */
import type { KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import { appendReceipts, verifyUpload, type AcceptedReceipt, type VerifiedUpload } from '../resources/release-receipts/commands.js';
import { runUnitOfWork, systemActor, type UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import type { DeviceCaStore } from './device-ca.js';
import type { ReceiptVerifier } from './receipt-verifier.js';
import { SERVER_TUNING } from '../limits.js';

interface Waiting {
  v: VerifiedUpload;
  resolve(r: AcceptedReceipt): void;
  reject(e: unknown): void;
}

export interface ReceiptPublishingOptions {
  db: Kysely<Database>;
  cas: DeviceCaStore;
  now: () => Date;
  hooks?: UnitOfWorkHooks | undefined;
  /** Receipts per transaction at most. */
  maxBatch?: number;
  /** Transactions per tenant at a time. */
  writers?: number;
  /** Where receipts are verified (threads or inline). */
  verifier: ReceiptVerifier;
}

interface TenantQueue {
  waiting: Waiting[];
  writers: number;
}

export class ReceiptPipeline {
  private readonly queues = new Map<string, TenantQueue>();
  private readonly maxBatch: number;
  private readonly writers: number;

  constructor(private readonly o: ReceiptPublishingOptions) {
    this.maxBatch = o.maxBatch ?? 500;
    this.writers = o.writers ?? 2;
  }

  /** Receipt verification threads (0: inline). */
  get verifyThreads(): number {
    return this.o.verifier.size;
  }

  /**
   * Verifies one uploaded receipt, then resolves once its batch committed (or rejects with its
   * refusal). `peer` is the device authenticated on the call's connection (peer.ts): its
   * certificate was verified against a device CA of the tenant there, and `publicKey` is that
   * certificate's key as the handshake decoded it.
   */
  async accept(
    peer: { tenantId: string; deviceName: string; certDer: Uint8Array; publicKey?: KeyObject },
    envelopeBytes: Uint8Array,
    now: Date,
  ): Promise<AcceptedReceipt> {
    // the tenant's CAs trusted now: the current one and the retired ones inside their trust window
    const caDers = await this.o.cas.certificatesDer(peer.tenantId, now);
    const v = await verifyUpload(
      this.o.db,
      {
        tenant: peer.tenantId,
        deviceName: peer.deviceName,
        connectionCertificateDer: peer.certDer,
        connectionCertificateVerified: true,
        envelopeBytes,
        now,
        caDers,
      },
      // in a verification thread, with the key the connection's handshake decoded (the device signs with its certificate's key)
      (input) => this.o.verifier.verify({ ...input, ...(peer.publicKey === undefined ? {} : { publicKey: peer.publicKey }) }),
    );
    return new Promise((resolve, reject) => {
      let q = this.queues.get(peer.tenantId);
      if (q === undefined) {
        q = { waiting: [], writers: 0 };
        this.queues.set(peer.tenantId, q);
      }
      q.waiting.push({ v, resolve, reject });
      if (q.writers < this.writers) {
        q.writers += 1;
        // receipts verified in the same turn of the event loop join the first batch
        setImmediate(() => void this.drain(peer.tenantId, q));
      }
    });
  }

  /** One writer: takes batches off the tenant's queue until it is empty. */
  private async drain(tenant: string, q: TenantQueue): Promise<void> {
    try {
      while (q.waiting.length > 0) await this.commit(tenant, q.waiting.splice(0, this.maxBatch));
    } catch (e) {
      for (const w of q.waiting.splice(0)) w.reject(e);
    } finally {
      q.writers -= 1;
      if (q.writers === 0 && q.waiting.length === 0) this.queues.delete(tenant);
    }
  }

  private async commit(tenant: string, batch: Waiting[], attempt = 1): Promise<void> {
    let outcomes;
    try {
      outcomes = await runUnitOfWork(this.o.db, { tenant, actor: systemActor('receipts'), now: this.o.now(), hooks: this.o.hooks }, (uow) =>
        appendReceipts(
          uow,
          batch.map((w) => w.v),
        ),
      );
    } catch (e) {
      // a deadlock with another writer (an operator's approve, another process) is retried as is
      if (isRetryable(e) && attempt < SERVER_TUNING.receiptCommitAttempts) return this.commit(tenant, batch, attempt + 1);
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

/** PostgreSQL deadlock_detected and serialization_failure: the transaction did nothing and may run again. */
function isRetryable(e: unknown): boolean {
  const code = (e as { code?: string } | null)?.code;
  return code === '40P01' || code === '40001';
}
