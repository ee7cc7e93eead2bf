import { isDeepStrictEqual } from 'node:util';
import { Metadata, MetadataKind, Root } from '@tufjs/models';
import type { Db } from '../store/tx.js';
import type { RepoContext } from './context.js';
import { bumpChain, inspectRoleKey, loadOnlineKeys, mustLatest, type OnlineRole } from './chain.js';
import { SigningRepoError } from './errors.js';
import { tufExpires } from './expiry.js';
import { generateSigningKey, keyAsNamedBy, KeyStore, type SigningKey } from './keys.js';
import { decodeRoot, encodeMetadata } from './metadata.js';
import { commitNextRoot } from './root-rotation.js';
import { SERVER_LIMITS } from '../limits.js';
import { deletePendingRotation, getPendingRotation, insertMetadata, insertPendingRotation, lockRepo, touchRepo, type RepoTx } from './repo-db.js';

export const ONLINE_ROLES: readonly OnlineRole[] = ['targets', 'snapshot', 'timestamp'];

/** What a rotation changed or prepared: the roles, root N+1's version and the new keys' TUF key ids. */
export interface OnlineKeyRotation {
  rootVersion: number;
  roles: OnlineRole[];
  keyIds: Partial<Record<OnlineRole, string>>;
}

/** A prepared rotation, waiting for root N+1 to be signed offline. */
export interface PendingOnlineKeyRotation extends OnlineKeyRotation {
  /** The unsigned root N+1 metadata document (`signatures` empty): what the root key holders sign. */
  unsignedRoot: Buffer;
  createdAt: Date;
  /** The repository's current root version; the rotation is stale unless it is rootVersion - 1. */
  currentRootVersion: number;
}

/** Narrows the roles to rotate: 1 to 3 distinct online roles, the bad entry named. */
export function assertRotationRoles(value: unknown, field = 'roles'): OnlineRole[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > ONLINE_ROLES.length) {
    throw new SigningRepoError('KEY_INVALID', `${field} must list 1 to 3 of ${ONLINE_ROLES.join(', ')}`);
  }
  const seen = new Set<OnlineRole>();
  value.forEach((role: unknown, i) => {
    if (!ONLINE_ROLES.includes(role as OnlineRole)) {
      throw new SigningRepoError('KEY_INVALID', `${field}[${i}] must be one of ${ONLINE_ROLES.join(', ')}, got ${JSON.stringify(role)}`);
    }
    if (seen.has(role as OnlineRole)) throw new SigningRepoError('KEY_INVALID', `${field}[${i}] names ${String(role)} twice`);
    seen.add(role as OnlineRole);
  });
  // one order whatever the caller's: audit rows and answers compare equal
  return ONLINE_ROLES.filter((r) => seen.has(r));
}

/** The keys of a prepared rotation: wrapped like the active ones, under `<tenant>/tuf-pending/<role>`, signing nothing yet. */
function pendingKeys(ctx: RepoContext): KeyStore<OnlineRole> {
  return new KeyStore<OnlineRole>(ctx.keys.wrapped, 'tuf-pending');
}

type RootJson = {
  version: number;
  expires: string;
  keys: Record<string, unknown>;
  roles: Record<string, { keyids: string[]; threshold: number }>;
};

/**
 * Root N+1: root N with each role of `replace` naming only its new key (threshold 1), keys no
 * role names any more dropped, everything else (root keys, root threshold, consistent
 * snapshots) unchanged, and a fresh expiry. Unsigned.
 */
export function nextRootNaming(current: Root, now: Date, replace: Partial<Record<OnlineRole, SigningKey>>): Metadata<Root> {
  const json = current.toJSON() as RootJson;
  const before = new Set(Object.keys(json.keys));
  for (const [role, key] of Object.entries(replace)) {
    const r = json.roles[role];
    if (r === undefined) throw new SigningRepoError('REPO_NOT_FOUND', `root version ${current.version} has no ${role} role`);
    r.keyids = [key.keyId];
    r.threshold = 1;
    json.keys[key.keyId] = key.tufKey.toJSON();
  }
  for (const id of before) if (!Object.values(json.roles).some((r) => r.keyids.includes(id))) delete json.keys[id];
  json.version = current.version + 1;
  json.expires = tufExpires(now, 'root');
  return new Metadata(Root.fromJSON(json as unknown as Parameters<typeof Root.fromJSON>[0]));
}

async function lockOrThrow(trx: RepoTx, tenantId: string): Promise<void> {
  if (!(await lockRepo(trx, tenantId))) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
}

async function refuseWhilePending(trx: RepoTx, tenantId: string): Promise<void> {
  const pending = await getPendingRotation(trx, tenantId);
  if (pending !== undefined) {
    throw new SigningRepoError(
      'ROTATION_PENDING',
      `a rotation of the ${pending.roles.join(', ')} keys to root version ${pending.rootVersion} is prepared: accept its signed root or cancel it first`,
    );
  }
}

/**
 * Rotation with the root key on the server: new keys for `roles` stored wrapped, root N+1
 * naming them signed by the server-held root key (which must meet the root threshold alone),
 * and targets, snapshot and timestamp re-signed with the new keys, all inside the caller's
 * transaction `trx` (its unit of work writes the audit row in it). ROOT_KEY_UNAVAILABLE when
 * the root key is in offline custody: prepare the rotation instead.
 */
export async function rotateOnlineKeys(ctx: RepoContext, trx: RepoTx, tenantId: string, now: Date, roles: OnlineRole[]): Promise<OnlineKeyRotation> {
  await lockOrThrow(trx, tenantId);
  await refuseWhilePending(trx, tenantId);
  const current = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
  const rootKey = await inspectRoleKey(ctx.keys, tenantId, 'root', current, trx);
  if (rootKey.state !== 'ok') {
    throw new SigningRepoError(
      'ROOT_KEY_UNAVAILABLE',
      `the TUF root key of tenant ${tenantId} is not on the server (offline custody): prepare the rotation with root_signing "offline" and sign root version ${current.signed.version + 1} offline`,
    );
  }
  const threshold = current.signed.roles['root']?.threshold ?? 1;
  if (threshold > 1) {
    throw new SigningRepoError(
      'ROOT_KEY_UNAVAILABLE',
      `root version ${current.signed.version} needs ${threshold} root signatures and the server holds one root key: prepare the rotation with root_signing "offline"`,
    );
  }
  const fresh: Partial<Record<OnlineRole, SigningKey>> = {};
  for (const role of roles) {
    const key = generateSigningKey();
    fresh[role] = key;
    await ctx.keys.replace(tenantId, role, key, trx as unknown as Db);
  }
  const next = nextRootNaming(current.signed, now, fresh);
  // signs under the ids both roots name the root key by, checks both thresholds, re-issues the chain
  await commitNextRoot(ctx, trx, tenantId, now, current, next, [rootKey.key]);
  return { rootVersion: next.signed.version, roles, keyIds: keyIdsOf(fresh) };
}

/**
 * First step with the root key offline: new keys for `roles` stored wrapped as pending keys
 * (they sign nothing), and the unsigned root N+1 naming them recorded for export, inside the
 * caller's transaction. One prepared rotation per tenant (ROTATION_PENDING).
 */
export async function prepareOnlineKeyRotation(
  ctx: RepoContext,
  trx: RepoTx,
  tenantId: string,
  now: Date,
  roles: OnlineRole[],
): Promise<OnlineKeyRotation & { unsignedRoot: Buffer }> {
  await lockOrThrow(trx, tenantId);
  await refuseWhilePending(trx, tenantId);
  const current = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
  const pending = pendingKeys(ctx);
  const fresh: Partial<Record<OnlineRole, SigningKey>> = {};
  for (const role of ONLINE_ROLES) await pending.remove(tenantId, role, trx as unknown as Db);
  for (const role of roles) {
    const key = generateSigningKey();
    fresh[role] = key;
    await pending.replace(tenantId, role, key, trx as unknown as Db);
  }
  const next = nextRootNaming(current.signed, now, fresh);
  const unsignedRoot = encodeMetadata(next);
  await insertPendingRotation(trx, tenantId, { rootVersion: next.signed.version, roles, unsignedRoot });
  return { rootVersion: next.signed.version, roles, keyIds: keyIdsOf(fresh), unsignedRoot };
}

/** The tenant's prepared rotation; ROTATION_NOT_FOUND when there is none. */
export async function pendingOnlineKeyRotation(ctx: RepoContext, tenantId: string): Promise<PendingOnlineKeyRotation> {
  const pending = await getPendingRotation(ctx.db, tenantId);
  if (pending === undefined) throw new SigningRepoError('ROTATION_NOT_FOUND', `tenant ${tenantId} has no prepared TUF key rotation`);
  const current = await mustLatest(ctx.db, tenantId, 'root');
  const prepared = decodeRoot(pending.unsignedRoot).signed;
  const keyIds: Partial<Record<OnlineRole, string>> = {};
  for (const role of pending.roles) {
    const id = prepared.roles[role]?.keyIDs[0];
    if (id !== undefined) keyIds[role] = id;
  }
  return { ...pending, keyIds, currentRootVersion: current.version };
}

/**
 * Second step: `body` is root N+1 signed offline. It is accepted only when it is the prepared
 * root (its `signed` part unchanged, field by field), not expired, and signed by a threshold
 * of root N's root keys and of its own (TUF client workflow 5.3.4, 5.3.5, checked with
 * @tufjs/models as a device checks it). Then, inside the caller's transaction: the pending
 * keys become the active ones, root N+1 is stored as signed, and targets, snapshot and
 * timestamp are re-signed with the keys it names.
 */
export async function acceptSignedRoot(ctx: RepoContext, trx: RepoTx, tenantId: string, now: Date, body: unknown): Promise<OnlineKeyRotation> {
  await lockOrThrow(trx, tenantId);
  const pending = await getPendingRotation(trx, tenantId);
  if (pending === undefined) throw new SigningRepoError('ROTATION_NOT_FOUND', `tenant ${tenantId} has no prepared TUF key rotation`);
  const current = decodeRoot((await mustLatest(trx, tenantId, 'root')).bytes);
  if (current.signed.version + 1 !== pending.rootVersion) {
    throw new SigningRepoError(
      'ROTATION_STALE',
      `root version ${current.signed.version} was committed after the rotation to root version ${pending.rootVersion} was prepared: cancel it and prepare again`,
    );
  }
  const next = parseSignedRoot(body);
  const prepared = decodeRoot(pending.unsignedRoot);
  const diff = firstDifference(prepared.signed.toJSON(), next.signed.toJSON(), 'signed');
  if (diff !== undefined) {
    throw new SigningRepoError(
      'ROOT_INVALID',
      `${diff} differs from the prepared root version ${pending.rootVersion}: sign the document the server prepared, unchanged`,
    );
  }
  if (Date.parse(next.signed.expires) <= now.getTime()) {
    throw new SigningRepoError('ROOT_INVALID', `signed.expires ${next.signed.expires} has passed: cancel the rotation and prepare again`);
  }
  // TUF 5.3.4: signed by a threshold of the trusted root's keys
  assertThreshold(current, next, `root version ${current.signed.version}`);
  // TUF 5.3.5: and by a threshold of its own keys
  assertThreshold(next, next, `the new root version ${next.signed.version}`);

  const staged = pendingKeys(ctx);
  for (const role of pending.roles) {
    const key = await staged.load(tenantId, role, trx as unknown as Db);
    const named = key && keyAsNamedBy(next.signed, key);
    if (!named || !next.signed.roles[role]?.keyIDs.includes(named.keyId)) {
      throw new SigningRepoError(
        'KEY_UNAVAILABLE',
        `the prepared TUF ${role} key of tenant ${tenantId} is missing or not the key root version ${pending.rootVersion} names (${staged.pathOf(tenantId, role)})`,
      );
    }
    await ctx.keys.replace(tenantId, role, named, trx as unknown as Db);
    await staged.remove(tenantId, role, trx as unknown as Db);
  }
  await insertMetadata(trx, tenantId, 'root', next.signed.version, encodeMetadata(next), next.signed.expires);
  await bumpChain(trx, tenantId, now, await loadOnlineKeys(ctx.keys, tenantId, next, trx), { resignTargets: true, resignSnapshot: true });
  await deletePendingRotation(trx, tenantId);
  await touchRepo(trx, tenantId);
  const keyIds: Partial<Record<OnlineRole, string>> = {};
  for (const role of pending.roles) {
    const id = next.signed.roles[role]?.keyIDs[0];
    if (id !== undefined) keyIds[role] = id;
  }
  return { rootVersion: next.signed.version, roles: pending.roles, keyIds };
}

/** Drops the prepared rotation and its pending keys; the repository is as before it. */
export async function cancelOnlineKeyRotation(ctx: RepoContext, trx: RepoTx, tenantId: string): Promise<{ rootVersion: number; roles: OnlineRole[] }> {
  await lockOrThrow(trx, tenantId);
  const pending = await getPendingRotation(trx, tenantId);
  if (pending === undefined) throw new SigningRepoError('ROTATION_NOT_FOUND', `tenant ${tenantId} has no prepared TUF key rotation`);
  const staged = pendingKeys(ctx);
  for (const role of ONLINE_ROLES) await staged.remove(tenantId, role, trx as unknown as Db);
  await deletePendingRotation(trx, tenantId);
  return { rootVersion: pending.rootVersion, roles: pending.roles };
}

/** Narrows an untrusted signed root document; ROOT_INVALID naming the field. */
function parseSignedRoot(body: unknown): Metadata<Root> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new SigningRepoError('ROOT_INVALID', 'body must be a TUF root metadata object');
  const { signed, signatures } = body as Record<string, unknown>;
  if (typeof signed !== 'object' || signed === null || Array.isArray(signed)) throw new SigningRepoError('ROOT_INVALID', 'signed must be an object');
  if ((signed as Record<string, unknown>)['_type'] !== 'root') throw new SigningRepoError('ROOT_INVALID', 'signed._type must be "root"');
  if (!Array.isArray(signatures) || signatures.length === 0 || signatures.length > SERVER_LIMITS.signedRootSignatures) {
    throw new SigningRepoError('ROOT_INVALID', `signatures must be an array of 1 to ${SERVER_LIMITS.signedRootSignatures} signatures`);
  }
  signatures.forEach((s: unknown, i) => {
    const sig = s as Record<string, unknown> | null;
    if (
      typeof sig !== 'object' ||
      sig === null ||
      typeof sig['keyid'] !== 'string' ||
      typeof sig['sig'] !== 'string' ||
      !/^[0-9a-f]{1,1024}$/.test(sig['sig'])
    ) {
      throw new SigningRepoError('ROOT_INVALID', `signatures[${i}] must be {"keyid": string, "sig": lowercase hex}`);
    }
  });
  try {
    return Metadata.fromJSON(MetadataKind.Root, body as Parameters<typeof Metadata.fromJSON>[1]);
  } catch (e) {
    throw new SigningRepoError('ROOT_INVALID', `body is not TUF root metadata: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

/** verifyDelegate of @tufjs/models, with a refusal that says how many valid signatures of which keys it found. */
function assertThreshold(trusted: Metadata<Root>, next: Metadata<Root>, which: string): void {
  try {
    trusted.verifyDelegate('root', next);
  } catch (e) {
    const role = trusted.signed.roles['root'];
    const valid = (role?.keyIDs ?? []).filter((id) => {
      try {
        trusted.signed.keys[id]?.verifySignature(next);
        return trusted.signed.keys[id] !== undefined;
      } catch {
        return false;
      }
    });
    throw new SigningRepoError(
      'ROOT_SIGNATURE_INSUFFICIENT',
      `signatures: ${valid.length} valid signature(s) by the root keys of ${which}, which needs ${role?.threshold ?? 1} (its root keys: ${(role?.keyIDs ?? []).join(', ')})`,
      { cause: e },
    );
  }
}

/** The path (`signed.roles.targets.keyids`) of the first place two JSON values differ, or undefined. */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (isDeepStrictEqual(a, b)) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return path;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return path;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  for (const k of [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort()) {
    const d = firstDifference(ao[k], bo[k], `${path}.${k}`);
    if (d !== undefined) return d;
  }
  return path;
}

function keyIdsOf(keys: Partial<Record<OnlineRole, SigningKey>>): Partial<Record<OnlineRole, string>> {
  return Object.fromEntries(Object.entries(keys).map(([role, k]) => [role, k.keyId]));
}
