import { ServerError } from '../../errors/server-error.js';
import { SigningRepoError, type OnlineKeyRotation, type OnlineRole, type SigningRepository } from '../../signing-repo/index.js';
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

/**
 * Offline custody, step 1: the server-held root key handed out (PKCS#8 PEM) with an audit row
 * naming its key id. The key stays on the server until `deleteTufRootKey` names it.
 */
export const exportTufRootKey: Command<{ repo: SigningRepository }, { keyId: string; pem: string }> = async (uow, { repo }) => {
  const key = await repo.keys.load(uow.tenant, 'root', uow.trx);
  if (key === undefined) throw new SigningRepoError('ROOT_KEY_UNAVAILABLE', `the TUF root key of tenant ${uow.tenant} is not on the server (offline custody)`);
  await uow.audit({ action: 'tuf.root-key.export', target: `tuf-key:${key.keyId}`, detail: { key_id: key.keyId } });
  return { keyId: key.keyId, pem: key.pem };
};

/**
 * Offline custody, step 2: the server-held root key deleted, only when the caller names its key
 * id (proof the exported copy is the key being deleted). Afterwards the server signs no root.
 */
export const deleteTufRootKey: Command<{ repo: SigningRepository; keyId: string }, { keyId: string }> = async (uow, { repo, keyId }) => {
  const key = await repo.keys.load(uow.tenant, 'root', uow.trx);
  if (key === undefined) throw new SigningRepoError('ROOT_KEY_UNAVAILABLE', `the TUF root key of tenant ${uow.tenant} is not on the server (offline custody)`);
  if (key.keyId !== keyId) throw new ServerError('INVALID_INPUT', `query.key_id ${keyId} is not the key id of the server-held root key (${key.keyId})`);
  await repo.keys.remove(uow.tenant, 'root', uow.trx);
  await uow.audit({ action: 'tuf.root-key.delete', target: `tuf-key:${key.keyId}`, detail: { key_id: key.keyId } });
  return { keyId: key.keyId };
};
