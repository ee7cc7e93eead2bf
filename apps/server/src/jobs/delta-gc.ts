import type { Kysely, Transaction } from 'kysely';
import type { Digest } from '@svc/release-core';
import type { BlobStore } from '../blobs/blob-store.js';
import { SERVER_TUNING } from '../limits.js';
import { retireDeltas, type RetireReason } from '../resources/deltas/commands.js';
import { unusedDeltas } from '../resources/deltas/queries.js';
import { runUnitOfWork, systemActor, type UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { startInterval, type Job } from './interval.js';

const ACTOR = systemActor('delta-gc');

export interface DeltaGcDeps {
  /** Where the members a delta joins are stored: a delta whose source or target is gone is retired at once. */
  blobs: BlobStore;
  /** Takes targets out of the tenant's signed metadata inside the given transaction (SigningRepository.retireTargets). */
  retireTargets(trx: Transaction<Database>, tenant: string, paths: readonly string[]): Promise<unknown>;
}

/**
 * Collects deltas with their sources (docs/delta-updates.md "Garbage collection"). A delta that
 * no running rollout could use (no deployment still owing results installs its target member)
 * is retired once it has been unused for `graceMs` since its last build or reuse, or at once
 * when its source or target member is no longer in the blob store. Retiring deletes its rows
 * and, for a ready one, its TUF target (retireDeltas); the blob collector then takes its blob,
 * which nothing names any more. Safe in every server process at once: each tenant's deletion
 * re-checks the conditions under row locks. Answers the deltas retired.
 */
export async function runDeltaGc(
  db: Kysely<Database>,
  deps: DeltaGcDeps,
  now: () => Date,
  opts: { graceMs?: number; batch?: number; hooks?: UnitOfWorkHooks } = {},
): Promise<number> {
  const cutoff = new Date(now().getTime() - (opts.graceMs ?? SERVER_TUNING.deltaRetireAfterMs));
  const batch = opts.batch ?? SERVER_TUNING.deltaGcBatch;
  const stored = new Map<string, Promise<boolean>>();
  const has = (digest: Digest) => {
    let p = stored.get(digest);
    if (p === undefined) stored.set(digest, (p = deps.blobs.has(digest)));
    return p;
  };
  let retired = 0;
  let after: { updatedAt: Date; id: string } | undefined;
  for (;;) {
    const page = await unusedDeltas(db, { limit: batch, ...(after ? { after } : {}) });
    const byTenant = new Map<string, { id: string; notAfter: Date; reason: RetireReason }[]>();
    for (const d of page) {
      let reason: RetireReason | undefined;
      if (d.updated_at <= cutoff) reason = 'unused';
      else if (!(await has(d.source_digest))) reason = 'source-gone';
      else if (!(await has(d.target_digest))) reason = 'target-gone';
      if (reason === undefined) continue;
      const rows = byTenant.get(d.tenant_id) ?? [];
      rows.push({ id: d.id, notAfter: d.updated_at, reason });
      byTenant.set(d.tenant_id, rows);
    }
    for (const [tenant, rows] of byTenant) {
      retired += await runUnitOfWork(db, { tenant, actor: ACTOR, now: now(), hooks: opts.hooks }, (uow) =>
        retireDeltas(uow, { rows, retireTargets: deps.retireTargets }),
      );
    }
    const last = page.at(-1);
    if (last === undefined || page.length < batch) return retired;
    after = { updatedAt: last.updated_at, id: last.id };
  }
}

/** Runs the delta collector every `intervalMs` (default SERVER_TUNING.deltaGcIntervalMs) in every server process. */
export function startDeltaGc(
  db: Kysely<Database>,
  deps: DeltaGcDeps,
  now: () => Date,
  opts: { intervalMs?: number; onError?: (e: unknown) => void; onRetired?: (n: number) => void } = {},
): Job {
  return startInterval(
    async () => {
      const n = await runDeltaGc(db, deps, now);
      if (n > 0) opts.onRetired?.(n);
    },
    opts.intervalMs ?? SERVER_TUNING.deltaGcIntervalMs,
    opts.onError ?? (() => {}),
  );
}
