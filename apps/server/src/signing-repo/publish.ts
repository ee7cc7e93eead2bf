import { isDeepStrictEqual } from 'node:util';
import { digestHex } from '@svc/release-core';
import type { TargetFile } from '@tufjs/models';
import type { RepoContext } from './context.js';
import { bumpChain, loadOnlineKeys, mustLatest } from './chain.js';
import { SigningRepoError } from './errors.js';
import { decodeRoot, decodeTargets, targetFile } from './metadata.js';
import { lockRepo } from './repo-db.js';
import { mediaTypeOf, type TargetEntry } from './target-entry.js';

export interface PublishOptions {
  /**
   * spec §3 rule 6: releases are immutable once published. With `immutable`, an entry whose
   * path already exists must be byte-identical (hash, length, custom) or the whole
   * publish is refused with TARGET_IMMUTABLE; an identical entry is a no-op.
   */
  immutable?: boolean;
}

export interface PublishResult {
  /** False when every entry was already published exactly so (an idempotent retry): no versions bumped. */
  changed: boolean;
  targetsVersion: number;
  snapshotVersion: number;
  timestampVersion: number;
}

/**
 * Adds or replaces target entries atomically: one transaction that locks the
 * tenant's repository row, signs targets, snapshot and timestamp N+1, inserts
 * them and commits. Blobs are checked first (metadata only ever names
 * bytes that are already stored).
 */
export async function publishTargets(ctx: RepoContext, tenantId: string, entries: TargetEntry[], opts: PublishOptions): Promise<PublishResult> {
  for (const [i, entry] of entries.entries()) {
    // retained: a blob no row names yet must outlive this commit (blob garbage collection)
    const info = await ctx.blobs.retain(entry.digest);
    if (!info || info.length !== entry.length) {
      throw new SigningRepoError(
        'TARGET_BLOB_MISSING',
        info
          ? `targets[${i}].length is ${entry.length} but blob ${entry.digest} has ${info.length} bytes`
          : `targets[${i}].digest names blob ${entry.digest}, which is not stored`,
      );
    }
  }
  const now = ctx.clock();
  return ctx.db.transaction().execute(async (trx) => {
    if (!(await lockRepo(trx, tenantId))) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
    const root = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
    const current = decodeTargets((await mustLatest(trx, tenantId, 'targets')).bytes);
    const next: Record<string, TargetFile> = { ...current.signed.targets };
    let changed = false;
    for (const [i, entry] of entries.entries()) {
      const candidate = targetFile(entry.path, digestHex(entry.digest), entry.length, entry.custom);
      const existing = next[entry.path];
      if (existing && sameTarget(existing, candidate)) continue;
      if (existing && opts.immutable) {
        throw new SigningRepoError(
          'TARGET_IMMUTABLE',
          `targets[${i}].path ${JSON.stringify(entry.path)} is already published with sha256 ${existing.hashes['sha256'] ?? '?'} and cannot change`,
        );
      }
      next[entry.path] = candidate;
      changed = true;
    }
    const ts = current.signed;
    if (!changed) {
      const snap = await mustLatest(trx, tenantId, 'snapshot');
      const stamp = await mustLatest(trx, tenantId, 'timestamp');
      return { changed, targetsVersion: ts.version, snapshotVersion: snap.version, timestampVersion: stamp.version };
    }
    const keys = await loadOnlineKeys(ctx.keys, tenantId, root, trx);
    const versions = await bumpChain(trx, tenantId, now, keys, { targets: next });
    for (const entry of entries) {
      await trx
        .insertInto('tuf_target_files')
        .values({
          tenant_id: tenantId,
          path: entry.path,
          sha256: digestHex(entry.digest),
          length: entry.length,
          targets_version: versions.targetsVersion,
          media_type: mediaTypeOf(entry.custom),
        })
        .onConflict((oc) => oc.columns(['tenant_id', 'path', 'sha256']).doNothing())
        .execute();
    }
    await ctx.hooks.beforeCommit?.(tenantId);
    return { changed, ...versions };
  });
}

function sameTarget(a: TargetFile, b: TargetFile): boolean {
  return a.length === b.length && isDeepStrictEqual(a.hashes, b.hashes) && isDeepStrictEqual(a.custom, b.custom);
}
