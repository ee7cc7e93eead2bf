import type { RepoContext } from './context.js';
import { bumpChain, loadOnlineKeys, mustLatest } from './chain.js';
import { isDue, type TufRole } from './expiry.js';
import { decodeRoot, decodeSnapshot, decodeTargets, decodeTimestamp } from './metadata.js';
import { listRepoTenants, lockRepo } from './repo-db.js';

export interface RefreshResult {
  tenantId: string;
  /** Roles re-signed by this call (empty when nothing was due). */
  refreshed: TufRole[];
  /** When the current root expires: root is rotated by an operator, the job only reports it. */
  rootExpires: string;
}

/**
 * Re-signs whatever nears expiry (expiry.ts margins) in one locked transaction.
 * Due-ness is decided again under the lock, so two processes running the job at
 * once bump each role once.
 */
export async function refreshIfDue(ctx: RepoContext, tenantId: string, now: Date): Promise<RefreshResult> {
  return ctx.db.transaction().execute(async (trx) => {
    if (!(await lockRepo(trx, tenantId))) return { tenantId, refreshed: [], rootExpires: '' };
    const root = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
    const targetsDue = isDue(decodeTargets((await mustLatest(trx, tenantId, 'targets')).bytes).signed.expires, now, 'targets');
    const snapshotDue = isDue(decodeSnapshot((await mustLatest(trx, tenantId, 'snapshot')).bytes).signed.expires, now, 'snapshot');
    const timestampDue = isDue(decodeTimestamp((await mustLatest(trx, tenantId, 'timestamp')).bytes).signed.expires, now, 'timestamp');
    const refreshed: TufRole[] = [];
    if (targetsDue || snapshotDue || timestampDue) {
      const keys = await loadOnlineKeys(ctx.keys, tenantId, root, trx);
      await bumpChain(trx, tenantId, now, keys, { resignTargets: targetsDue, resignSnapshot: snapshotDue });
      if (targetsDue) refreshed.push('targets');
      if (targetsDue || snapshotDue) refreshed.push('snapshot');
      refreshed.push('timestamp');
    }
    return { tenantId, refreshed, rootExpires: root.signed.expires };
  });
}

/** The refresh job's body: every tenant repository; one tenant's failure does not stop the others. */
export async function refreshAllDue(ctx: RepoContext, now: Date): Promise<{ results: RefreshResult[]; failures: { tenantId: string; error: Error }[] }> {
  const results: RefreshResult[] = [];
  const failures: { tenantId: string; error: Error }[] = [];
  for (const tenantId of await listRepoTenants(ctx.db)) {
    try {
      results.push(await refreshIfDue(ctx, tenantId, now));
    } catch (e) {
      failures.push({ tenantId, error: e as Error });
    }
  }
  return { results, failures };
}
