import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { AdvisoryCache } from '../resources/findings/analysis.js';
import { analyzeRunBatch, LEASE_MS, signalSweep } from '../resources/vuln-analysis/commands.js';
import { leaseRun, tenantsWithUnsignalled } from '../resources/vuln-analysis/queries.js';
import { runUnitOfWork, systemActor, type UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import { startInterval, type Job } from './interval.js';

const ACTOR = systemActor('vuln-analysis');

/**
 * Re-analysis after a feed import (docs/vulnerabilities.md): leases queued runs through the
 * database (several server processes share them; a crashed one's lease lapses and another
 * continues from the run's cursor) and works them batch by batch, each batch its own unit of
 * work. Then the signal sweep: known-exploited findings whose artifacts devices started
 * running get the Article 14 signal. Answers the batches done.
 */
export async function runVulnAnalysis(
  db: Kysely<Database>,
  now: () => Date,
  opts: { owner?: string; maxBatches?: number; hooks?: UnitOfWorkHooks } = {},
): Promise<number> {
  const owner = opts.owner ?? `${process.pid}-${randomUUID()}`;
  const maxBatches = opts.maxBatches ?? 50;
  let batches = 0;
  while (batches < maxBatches) {
    const t = now();
    const run = await leaseRun(db, owner, t, new Date(t.getTime() + LEASE_MS));
    if (!run) break;
    const advisories = new AdvisoryCache();
    for (;;) {
      const r = await runUnitOfWork(db, { tenant: run.tenant_id, actor: ACTOR, now: now(), hooks: opts.hooks }, (uow) =>
        analyzeRunBatch(uow, { runId: run.id, owner, advisories }),
      );
      batches++;
      if (!r || r.state === 'completed' || batches >= maxBatches) break;
    }
  }
  for (const tenant of await tenantsWithUnsignalled(db))
    await runUnitOfWork(db, { tenant, actor: ACTOR, now: now(), hooks: opts.hooks }, (uow) => signalSweep(uow, {}));
  return batches;
}

export function startVulnAnalysis(db: Kysely<Database>, now: () => Date, opts: { intervalMs?: number; onError?: (e: unknown) => void } = {}): Job {
  const owner = `${process.pid}-${randomUUID()}`;
  return startInterval(() => runVulnAnalysis(db, now, { owner }), opts.intervalMs ?? 10_000, opts.onError ?? (() => {}));
}
