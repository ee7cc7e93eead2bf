import type { OnlineKeyRotation, OnlineRole, SigningRepository } from '../../signing-repo/index.js';
import type { Command } from '../unit-of-work.js';

/**
 * The planned rotations of a tenant's TUF online keys (docs/signing-repository.md "Rotating the
 * online keys"): each change of the signing repository and its audit row share the unit of
 * work's transaction, so a rotation never commits unaudited and an audit row never names a
 * root that did not commit.
 */

function detail(r: OnlineKeyRotation, rootSigning: 'server' | 'offline'): Record<string, unknown> {
  return { roles: r.roles, root_version: r.rootVersion, key_ids: r.keyIds, root_signing: rootSigning };
}

/** Root key on the server: new keys, root N+1 signed by it, the chain re-signed. */
export const rotateTufOnlineKeys: Command<{ repo: SigningRepository; roles: OnlineRole[] }, OnlineKeyRotation> = async (uow, { repo, roles }) => {
  const r = await repo.rotateOnlineKeys(uow.trx, uow.tenant, uow.now, roles);
  await uow.audit({ action: 'tuf.online-keys.rotate', target: `tuf-root:${r.rootVersion}`, detail: detail(r, 'server') });
  return r;
};

/** Root key offline, step 1: pending keys and the unsigned root N+1. */
export const prepareTufOnlineKeyRotation: Command<{ repo: SigningRepository; roles: OnlineRole[] }, OnlineKeyRotation & { unsignedRoot: Buffer }> = async (
  uow,
  { repo, roles },
) => {
  const r = await repo.prepareOnlineKeyRotation(uow.trx, uow.tenant, uow.now, roles);
  await uow.audit({ action: 'tuf.online-keys.prepare', target: `tuf-root:${r.rootVersion}`, detail: detail(r, 'offline') });
  return r;
};

/** Root key offline, step 2: the signed root N+1 accepted, the pending keys active. */
export const activateTufOnlineKeys: Command<{ repo: SigningRepository; signedRoot: unknown }, OnlineKeyRotation> = async (uow, { repo, signedRoot }) => {
  const r = await repo.acceptSignedRoot(uow.trx, uow.tenant, uow.now, signedRoot);
  await uow.audit({ action: 'tuf.online-keys.rotate', target: `tuf-root:${r.rootVersion}`, detail: detail(r, 'offline') });
  return r;
};

/** The prepared rotation dropped with its pending keys. */
export const cancelTufOnlineKeyRotation: Command<{ repo: SigningRepository }, { rootVersion: number; roles: OnlineRole[] }> = async (uow, { repo }) => {
  const r = await repo.cancelOnlineKeyRotation(uow.trx, uow.tenant);
  await uow.audit({ action: 'tuf.online-keys.cancel', target: `tuf-root:${r.rootVersion}`, detail: { roles: r.roles, root_version: r.rootVersion } });
  return r;
};
