import type { RepoContext } from './context.js';
import { bumpChain, loadOnlineKeys, mustLatest } from './chain.js';
import { SigningRepoError } from './errors.js';
import { decodeRoot, decodeTargets } from './metadata.js';
import { lockRepo, type RepoTx } from './repo-db.js';

export interface RetireResult {
  /** Paths taken out of the signed targets metadata (of those asked for, the ones listed). */
  removed: string[];
  /** The new targets version, when one was signed. */
  targetsVersion?: number;
}

/**
 * Takes targets out of the tenant's repository inside the caller's transaction (so the rows
 * that justified the removal go in the same commit): locks the repository row, signs targets,
 * snapshot and timestamp N+1 without `paths`, and deletes their `tuf_target_files` rows, after
 * which no committed row of the repository names their blobs and the blob collector may take
 * them. Nothing is signed when none of `paths` is listed.
 *
 * Only for targets no device needs any more (the caller's rule): a client holding the previous
 * targets metadata that still asks for a removed path gets a 404.
 */
export async function retireTargets(ctx: RepoContext, trx: RepoTx, tenantId: string, paths: readonly string[]): Promise<RetireResult> {
  if (!(await lockRepo(trx, tenantId))) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
  const asked = [...new Set(paths)];
  if (asked.length === 0) return { removed: [] };
  const current = decodeTargets((await mustLatest(trx, tenantId, 'targets')).bytes);
  const next = { ...current.signed.targets };
  const removed = asked.filter((p) => next[p] !== undefined);
  for (const p of removed) delete next[p];
  await trx.deleteFrom('tuf_target_files').where('tenant_id', '=', tenantId).where('path', 'in', asked).execute();
  if (removed.length === 0) return { removed };
  const root = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
  const keys = await loadOnlineKeys(ctx.keys, tenantId, root, trx);
  const versions = await bumpChain(trx, tenantId, ctx.clock(), keys, { targets: next });
  return { removed, targetsVersion: versions.targetsVersion };
}
