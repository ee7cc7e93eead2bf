import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { SERVER_TUNING } from '../limits.js';
import { buildDelta, type DeltaBuildDeps } from '../resources/deltas/builder.js';
import { finishDeltaBuild } from '../resources/deltas/commands.js';
import { failExhaustedDeltas, leaseDelta } from '../resources/deltas/queries.js';
import { runUnitOfWork, systemActor, type UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { startInterval, type Job } from './interval.js';

const ACTOR = systemActor('delta-builds');

/**
 * Builds queued deltas (docs/delta-updates.md): leases one through the database (several
 * server processes share the queue; the lease outlasts the build's time bound, so only a dead
 * or hung builder loses it, and a delta is leased at most SERVER_TUNING.deltaBuildAttempts
 * times), builds it one zstd process at a time, and records the outcome with its audit row.
 * Answers the builds finished.
 */
export async function runDeltaBuilds(
  db: Kysely<Database>,
  deps: DeltaBuildDeps,
  now: () => Date,
  opts: { owner?: string; maxBuilds?: number; hooks?: UnitOfWorkHooks } = {},
): Promise<number> {
  const owner = opts.owner ?? `${process.pid}-${randomUUID()}`;
  const leaseMs = (deps.timeoutMs ?? SERVER_TUNING.deltaBuildTimeoutMs) * 2 + 60_000;
  let built = 0;
  await failExhaustedDeltas(db, { now: now(), maxAttempts: SERVER_TUNING.deltaBuildAttempts });
  while (built < (opts.maxBuilds ?? SERVER_TUNING.deltaBuildsPerPass)) {
    const t = now();
    const row = await leaseDelta(db, { owner, now: t, until: new Date(t.getTime() + leaseMs), maxAttempts: SERVER_TUNING.deltaBuildAttempts });
    if (!row) break;
    const outcome = await buildDelta(deps, {
      tenant_id: row.tenant_id,
      source_digest: row.source_digest,
      target_digest: row.target_digest,
      source_length: Number(row.source_length),
      target_length: Number(row.target_length),
    });
    await runUnitOfWork(db, { tenant: row.tenant_id, actor: ACTOR, now: now(), hooks: opts.hooks }, (uow) => finishDeltaBuild(uow, { row, owner, outcome }));
    built++;
  }
  return built;
}

export function startDeltaBuilds(
  db: Kysely<Database>,
  deps: DeltaBuildDeps,
  now: () => Date,
  opts: { intervalMs?: number; onError?: (e: unknown) => void } = {},
): Job {
  const owner = `${process.pid}-${randomUUID()}`;
  return startInterval(() => runDeltaBuilds(db, deps, now, { owner }), opts.intervalMs ?? 2_000, opts.onError ?? (() => {}));
}
