import type { Db } from '../store/tx.js';
import { tufKeyId } from '@svc/release-core';
import { Metadata, Root } from '@tufjs/models';
import type { RepoContext } from './context.js';
import { mustLatest } from './chain.js';
import { SigningRepoError, isSigningRepoError } from './errors.js';
import { tufExpires } from './expiry.js';
import { decodeRoot } from './metadata.js';
import { listRepoTenants, lockRepo } from './repo-db.js';
import { commitNextRoot } from './root-rotation.js';

export interface KeyIdUpgradeResult {
  /** Repositories moved to TUF key ids by this call: their new root version. */
  rotated: { tenantId: string; rootVersion: number }[];
  /**
   * Repositories still naming keys by `sha256:` + SPKI ids that this call could not move:
   * ROOT_KEY_UNAVAILABLE (the root key is offline) or ROOT_SIGNATURE_INSUFFICIENT (the
   * server-held key alone does not meet the root threshold). They keep working under their
   * old ids; `rotateRoot` with `signWith` moves them. Any other failure is listed too.
   */
  pending: { tenantId: string; error: Error }[];
}

/** True when every key root lists is named by its TUF key id (contracts §1). */
export function usesTufKeyIds(root: Root): boolean {
  return Object.entries(root.keys).every(([id, key]) => id === tufKeyId(key.keyType, key.scheme, key.keyVal));
}

/**
 * Root N+1: root N with every key renamed to its TUF key id (the same keys, roles and
 * thresholds), a fresh expiry.
 */
function renamedRoot(current: Root, now: Date): Metadata<Root> {
  const json = current.toJSON() as {
    version: number;
    expires: string;
    keys: Record<string, { keytype: string; scheme: string; keyval: Record<string, string> }>;
    roles: Record<string, { keyids: string[] }>;
  };
  const rename = new Map(Object.entries(json.keys).map(([id, k]) => [id, tufKeyId(k.keytype, k.scheme, k.keyval)]));
  json.keys = Object.fromEntries(Object.entries(json.keys).map(([id, k]) => [rename.get(id)!, k]));
  for (const role of Object.values(json.roles)) role.keyids = role.keyids.map((id) => rename.get(id) ?? id);
  json.version = current.version + 1;
  json.expires = tufExpires(now, 'root');
  return new Metadata(Root.fromJSON(json));
}

/**
 * Moves one repository whose root names keys by `sha256:` + SPKI ids to TUF key ids: root
 * N+1 names the same keys by their TUF key ids and is signed by the server-held root key
 * under both ids, so a device trusting root N (or any earlier root) follows the chain; then
 * targets, snapshot and timestamp are re-issued under the new ids, all in one locked
 * transaction. Returns the new root version, or undefined when the root already uses TUF
 * key ids.
 */
export async function upgradeKeyIds(ctx: RepoContext, tenantId: string): Promise<number | undefined> {
  const now = ctx.clock();
  return ctx.db.transaction().execute(async (trx) => {
    if (!(await lockRepo(trx, tenantId))) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
    const current = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
    if (usesTufKeyIds(current.signed)) return undefined;
    const held = await ctx.keys.load(tenantId, 'root', trx as unknown as Db);
    if (!held) {
      throw new SigningRepoError(
        'ROOT_KEY_UNAVAILABLE',
        `root version ${current.signed.version} of tenant ${tenantId} names keys by sha256: ids and its root key is not on the server: rotateRoot with signWith (the offline root key) moves it to TUF key ids`,
      );
    }
    const next = renamedRoot(current.signed, now);
    try {
      await commitNextRoot(ctx, trx, tenantId, now, current, next, [held]);
    } catch (e) {
      if (isSigningRepoError(e, 'ROOT_SIGNATURE_INSUFFICIENT')) {
        throw new SigningRepoError(
          'ROOT_SIGNATURE_INSUFFICIENT',
          `${e.message}: rotateRoot with signWith (the offline root keys) moves tenant ${tenantId} to TUF key ids`,
          { cause: e },
        );
      }
      throw e;
    }
    return next.signed.version;
  });
}

/** upgradeKeyIds for every tenant repository (server start); one tenant's failure does not stop the others. */
export async function upgradeAllKeyIds(ctx: RepoContext): Promise<KeyIdUpgradeResult> {
  const result: KeyIdUpgradeResult = { rotated: [], pending: [] };
  for (const tenantId of await listRepoTenants(ctx.db)) {
    try {
      const rootVersion = await upgradeKeyIds(ctx, tenantId);
      if (rootVersion !== undefined) result.rotated.push({ tenantId, rootVersion });
    } catch (e) {
      result.pending.push({ tenantId, error: e as Error });
    }
  }
  return result;
}
