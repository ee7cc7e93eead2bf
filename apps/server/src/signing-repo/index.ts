/**
 * Per-tenant TUF signing repository. Public API, the only names other
 * areas import (from 'src/signing-repo/index.js'):
 *
 *   const repo = new SigningRepository({ db: store.db, dataDir: config.dataDir });
 *   await repo.ensureTenantRepo(tenantId);                          // keys + v1 metadata, idempotent, multi-process safe
 *   // publish flow (artifacts, releases): blob first, then metadata in one locked transaction
 *   const r = await repo.publishTargetStream(tenantId, { path, custom }, stream, { immutable: true, maxBytes });
 *   //   -> { digest, length, hashedPath, changed, targetsVersion, snapshotVersion, timestampVersion }
 *   //   or, with blobs already put via repo.blobs.put(stream):
 *   await repo.publishTargets(tenantId, [{ path, digest, length, custom }], { immutable: true });
 *   await repo.getTargetInfo(tenantId, path);                       // TargetInfo | undefined
 *   await repo.listTargets(tenantId);
 *   await repo.getMetadata(tenantId, '1.root.json');                // { role, version, bytes }; 'root.json' = newest root
 *   await repo.openRepoFile(tenantId, 'targets/<dir>/<hex>.<name>', range?) // transport-independent file serving
 *   await repo.refreshIfDue(tenantId, now); await repo.refreshAllDue(now)   // the refresh job (hourly is plenty)
 *   await repo.exportRootKey(tenantId); await repo.deleteRootKey(tenantId); // offline root custody
 *   await repo.rotateRoot(tenantId, { newRootKeyPems?, signWith?, threshold? })
 *   // planned online key rotation through root N+1, inside the caller's unit of work (online-key-rotation.ts)
 *   await repo.rotateOnlineKeys(trx, tenantId, now, ['targets'])               // root key on the server
 *   await repo.prepareOnlineKeyRotation(trx, tenantId, now, roles)              // root key offline: unsigned root N+1
 *   await repo.acceptSignedRoot(trx, tenantId, now, signedRootJson)             // ... signed offline, checked, keys activated
 *   await repo.pendingOnlineKeyRotation(tenantId); await repo.cancelOnlineKeyRotation(trx, tenantId)
 *   await repo.upgradeKeyIds();                                     // server start: sha256: key ids -> TUF key ids by root rotation
 *   app.register(signingRepoRoutes, { repo, permission, authorizeTenant })   // GET /tuf/{tenant}/metadata|targets/... (the app: /api/v1/tuf/...)
 *
 * Errors: SigningRepoError (codes in errors.ts) and BlobError (../blobs/errors.ts).
 * Tables: SigningRepoTables (tables.ts), migration store/migrations/0005_signing_repo.ts.
 */
export { SigningRepository, type SigningRepositoryOptions } from './repository.js';
export { signingRepoRoutes, type SigningRepoRoutesOptions } from './http-routes.js';
export { SigningRepoError, isSigningRepoError, type SigningRepoErrorCode } from './errors.js';
export type { PublishHooks } from './context.js';
export type { PublishOptions, PublishResult } from './publish.js';
export type { RefreshResult } from './refresh.js';
export type { RetireResult } from './retire.js';
export type { RotateRootOptions } from './root-rotation.js';
export type { KeyIdUpgradeResult } from './key-id-upgrade.js';
export { assertRotationRoles, ONLINE_ROLES, type OnlineKeyRotation, type PendingOnlineKeyRotation } from './online-key-rotation.js';
export type { OnlineRole } from './chain.js';
export type { RoleKeyReport } from './key-inspection.js';
export type { RepoFile, MetadataFile } from './repo-files.js';
export type { TargetEntry, TargetInfo } from './target-entry.js';
export type { SigningRepoTables } from './tables.js';
export { EXPIRY_PERIOD_MS, REFRESH_MARGIN_MS, type TufRole } from './expiry.js';
export { assertTargetPath } from './target-path.js';
export { KeyStore, signingKeyFromPem, generateSigningKey, type SigningKey } from './keys.js';
