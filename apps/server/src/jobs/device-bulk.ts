import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditCredential } from '../resources/audit/queries.js';
import { runBulkBatch } from '../resources/device-bulk/commands.js';
import { leaseBulkJob } from '../resources/device-bulk/queries.js';
import { runUnitOfWork, type UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { startInterval, type Job } from './interval.js';

/** A job's lease: renewed by every batch, so only a stalled or crashed worker loses it. */
export const BULK_LEASE_MS = 60_000;

/**
 * Works queued bulk actions (docs/inventory.md "Bulk actions"): leases a job through the
 * database (several server processes share the queue; a crashed one's lease lapses and
 * another continues with the devices still pending), then runs its batches, each its own unit
 * of work as the operator who created the job. Answers the batches run.
 */
export async function runDeviceBulkJobs(
  db: Kysely<Database>,
  now: () => Date,
  opts: { owner?: string; maxBatches?: number; hooks?: UnitOfWorkHooks } = {},
): Promise<number> {
  const owner = opts.owner ?? `${process.pid}-${randomUUID()}`;
  const maxBatches = opts.maxBatches ?? 200;
  let batches = 0;
  while (batches < maxBatches) {
    const t = now();
    const job = await leaseBulkJob(db, owner, t, new Date(t.getTime() + BULK_LEASE_MS));
    if (!job) break;
    const actor = { name: job.actor, credential: job.credential as AuditCredential, requestId: null };
    for (;;) {
      const r = await runUnitOfWork(db, { tenant: job.tenant_id, actor, now: now(), hooks: opts.hooks }, (uow) =>
        runBulkBatch(uow, { jobId: job.id, owner, leaseMs: BULK_LEASE_MS }),
      );
      batches++;
      if (!r || r.state === 'done' || batches >= maxBatches) break;
    }
  }
  return batches;
}

export function startDeviceBulkJobs(db: Kysely<Database>, now: () => Date, opts: { intervalMs?: number; onError?: (e: unknown) => void } = {}): Job {
  const owner = `${process.pid}-${randomUUID()}`;
  return startInterval(() => runDeviceBulkJobs(db, now, { owner }), opts.intervalMs ?? 2_000, opts.onError ?? (() => {}));
}
