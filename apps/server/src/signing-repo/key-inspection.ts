import type { RepoContext } from './context.js';
import { inspectRoleKey, mustLatest, type OnlineRole } from './chain.js';
import { SigningRepoError } from './errors.js';
import { generateSigningKey, type SigningKey } from './keys.js';
import { buildRoot, decodeRoot } from './metadata.js';
import { commitNextRoot } from './root-rotation.js';
import { latestMetadata, listRepoTenants, lockRepo } from './repo-db.js';

const ONLINE_ROLES: readonly OnlineRole[] = ['targets', 'snapshot', 'timestamp'];

/** One TUF role key of one tenant as its key file stands against the tenant's current root. */
export interface RoleKeyReport {
  tenantId: string;
  role: 'root' | OnlineRole;
  /** `absent` only for the root key: exported into offline custody, which is legitimate. */
  state: 'ok' | 'absent' | 'missing' | 'unreadable' | 'mismatch';
  /** One line naming the key and its tenant, unless ok or absent. */
  problem?: string;
}

/** Every role key of every tenant repository against the keys its current root metadata names. */
export async function inspectAllRoleKeys(ctx: RepoContext): Promise<RoleKeyReport[]> {
  const out: RoleKeyReport[] = [];
  for (const tenantId of await listRepoTenants(ctx.db)) {
    const row = await latestMetadata(ctx.db, tenantId, 'root');
    if (!row) continue;
    const root = decodeRoot(row.bytes);
    for (const role of ['root', ...ONLINE_ROLES] as const) {
      const found = await inspectRoleKey(ctx.keys, tenantId, role, root);
      if (found.state === 'ok') out.push({ tenantId, role, state: 'ok' });
      else if (role === 'root' && found.state === 'missing') out.push({ tenantId, role, state: 'absent' });
      else out.push({ tenantId, role, state: found.state, problem: found.problem });
    }
  }
  return out;
}

/**
 * Replaces every online key of the tenant whose file is missing, unreadable or not the key
 * root names by a new key, through root N+1 that names the new keys and is signed by the
 * server-held root key (which must meet the root threshold alone); targets, snapshot and
 * timestamp are re-signed with the new keys in the same transaction (commitNextRoot). Devices
 * follow the root chain as for any rotation. Returns the roles replaced and the new root
 * version, or undefined when every online key was in place.
 */
export async function rotateLostOnlineKeys(ctx: RepoContext, tenantId: string): Promise<{ roles: OnlineRole[]; rootVersion: number } | undefined> {
  const now = ctx.clock();
  const current = decodeRoot((await mustLatest(ctx.db, tenantId, 'root')).bytes);
  const rootKey = await inspectRoleKey(ctx.keys, tenantId, 'root', current);
  if (rootKey.state !== 'ok') {
    throw new SigningRepoError(
      'ROOT_KEY_UNAVAILABLE',
      `the TUF root key of tenant ${tenantId} is not on the server (or not usable), so no new root can be signed`,
    );
  }
  if (current.signed.roles['root']?.keyIDs.length !== 1) {
    // offline root keys beside the server's: only their holders can sign the next root
    throw new SigningRepoError(
      'ROOT_KEY_UNAVAILABLE',
      `the TUF root role of tenant ${tenantId} has keys in offline custody; rotate with them (rotateRoot signWith)`,
    );
  }
  const online = {} as Record<OnlineRole, SigningKey>;
  const replaced: OnlineRole[] = [];
  for (const role of ONLINE_ROLES) {
    const found = await inspectRoleKey(ctx.keys, tenantId, role, current);
    if (found.state === 'ok') online[role] = found.key;
    else {
      online[role] = generateSigningKey();
      replaced.push(role);
    }
  }
  if (replaced.length === 0) return undefined;
  // The new key files go first: root N+1 never names a key the server does not hold.
  for (const role of replaced) await ctx.keys.replace(tenantId, role, online[role]);
  const rootVersion = await ctx.db.transaction().execute(async (trx) => {
    if (!(await lockRepo(trx, tenantId))) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
    const latest = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
    const next = buildRoot({ version: latest.signed.version + 1, now, rootKeys: [rootKey.key], rootThreshold: 1, online });
    await commitNextRoot(ctx, trx, tenantId, now, latest, next, [rootKey.key]);
    return next.signed.version;
  });
  return { roles: replaced, rootVersion };
}
