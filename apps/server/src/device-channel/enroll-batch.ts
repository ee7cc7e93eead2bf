import type { Kysely } from 'kysely';
import { enrollDevice, enrollDevices, type Enrollment } from '../resources/devices/commands.js';
import { runUnitOfWork, runUnitsOfWorkTogether, type UnitOfWorkScope } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { SERVER_TUNING } from '../limits.js';

interface Pending {
  scope: UnitOfWorkScope;
  enrollment: Enrollment;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * Enrollment units of work, group-committed per process. Every enrollment of a tenant writes
 * the same rows (the token's use count, the tenant's device counts and list version), and a
 * transaction holds those row locks until COMMIT: with one transaction per enrollment they
 * queue behind each other's round trips and commit flush (measured: most sessions waiting on
 * a transaction lock, about 120-220 enrollments/s). Here an enrollment that finds no batch
 * committing starts one at the next turn of the event loop, with every enrollment that
 * arrived in the same turn; those arriving meanwhile wait for it and then commit together in
 * one transaction (`runUnitsOfWorkTogether`, `enrollDevices`): a handful of multi-row
 * statements for the whole batch (certificate log entries, devices with their history
 * entries, one token UPDATE per token, audit rows), so a burst pays one commit and a few round
 * trips per batch, the counts and list-version triggers fire once per batch, and nothing waits
 * on a lock inside this process.
 * Each enrollment keeps its own unit of work: its audit row, its actor, its clock, and its
 * token use spent last. A device name enrolling twice in one batch waits for the next one
 * (one statement cannot write a row twice). When a batch fails, its enrollments run again one
 * by one, so a refused one (a token used up meanwhile) fails alone and the others commit.
 */
export class EnrollmentBatcher {
  private queue: Pending[] = [];
  private running = false;

  constructor(private readonly db: Kysely<Database>) {}

  submit(scope: UnitOfWorkScope, enrollment: Enrollment): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ scope, enrollment, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      // the calls whose token check answered together reach here in one turn of the event
      // loop: let them in before the first commit starts, so a burst does not begin with a
      // batch of one
      await new Promise<void>((r) => setImmediate(r));
      while (this.queue.length > 0) await this.commit(this.nextBatch());
    } finally {
      this.running = false;
    }
  }

  /** Up to SERVER_TUNING.enrollBatch queued enrollments in arrival order, each (tenant, device name) once. */
  private nextBatch(): Pending[] {
    const batch: Pending[] = [];
    const names = new Set<string>();
    const rest: Pending[] = [];
    for (const p of this.queue) {
      const key = `${p.scope.tenant}/${p.enrollment.name}`;
      if (batch.length < SERVER_TUNING.enrollBatch && !names.has(key)) {
        names.add(key);
        batch.push(p);
      } else rest.push(p);
    }
    this.queue = rest;
    return batch;
  }

  private async commit(batch: Pending[]): Promise<void> {
    if (batch.length > 1) {
      try {
        await runUnitsOfWorkTogether(
          this.db,
          batch.map((p) => ({ scope: p.scope, input: p.enrollment })),
          enrollDevices,
        );
        for (const p of batch) p.resolve();
        return;
      } catch {
        // one of them failed: find out which, one by one
      }
    }
    for (const p of batch) {
      try {
        await runUnitOfWork(this.db, p.scope, (uow) => enrollDevice(uow, p.enrollment));
        p.resolve();
      } catch (e) {
        p.reject(e);
      }
    }
  }
}
