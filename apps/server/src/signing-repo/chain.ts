import type { Metadata, Root, TargetFile } from '@tufjs/models';
import { SigningRepoError } from './errors.js';
import type { Db } from '../store/tx.js';
import { tufExpires } from './expiry.js';
import { keyAsNamedBy, type KeyStore, type SigningKey } from './keys.js';
import { buildSnapshot, buildTargets, buildTimestamp, decodeTargets, encodeMetadata } from './metadata.js';
import { insertMetadata, latestMetadata, touchRepo, type MetadataRow, type RepoDb, type RepoTx } from './repo-db.js';

export type OnlineRole = 'targets' | 'snapshot' | 'timestamp';
export type OnlineKeys = Record<OnlineRole, SigningKey>;

/**
 * Loads the online keys and checks each is the key the current root names for its
 * role: a process whose KEK or database holds other keys must fail loudly rather than
 * publish metadata devices would reject. Each key signs under the id root
 * names it by (keyAsNamedBy).
 */
export async function loadOnlineKeys(keys: KeyStore, tenantId: string, root: Metadata<Root>, trx?: RepoTx): Promise<OnlineKeys> {
  const out: Partial<OnlineKeys> = {};
  for (const role of ['targets', 'snapshot', 'timestamp'] as const) {
    const found = await inspectRoleKey(keys, tenantId, role, root, trx);
    // a missing or wrong key file is an operator's problem (docs/server.md, keys and their integrity), not the caller's
    if (found.state !== 'ok') throw new SigningRepoError('KEY_UNAVAILABLE', `${found.problem}`);
    out[role] = found.key;
  }
  return out as OnlineKeys;
}

export type RoleKeyState = { state: 'ok'; key: SigningKey } | { state: 'missing' | 'unreadable' | 'mismatch'; problem: string };

/**
 * The stored key of `role` against the key `root` names for it: present, a readable Ed25519
 * PKCS#8 key, and listed for the role. `problem` is one line naming the key and its tenant.
 */
/** `trx`: the caller's transaction (the keys are read in it: PGlite has one session). */
export async function inspectRoleKey(keys: KeyStore, tenantId: string, role: 'root' | OnlineRole, root: Metadata<Root>, trx?: RepoTx): Promise<RoleKeyState> {
  const path = keys.pathOf(tenantId, role);
  const label = `TUF ${role} key of tenant ${tenantId}`;
  let key: SigningKey | undefined;
  try {
    key = await keys.load(tenantId, role, trx as unknown as Db | undefined);
  } catch (e) {
    return { state: 'unreadable', problem: `${label} is unreadable (${path}: ${e instanceof Error ? e.message : String(e)})` };
  }
  if (key === undefined) return { state: 'missing', problem: `${label} is missing (${path})` };
  const named = keyAsNamedBy(root.signed, key);
  if (!named || !root.signed.roles[role]?.keyIDs.includes(named.keyId)) {
    return { state: 'mismatch', problem: `${label} does not match the key root version ${root.signed.version} names (${path})` };
  }
  return { state: 'ok', key: named };
}

export interface ChainVersions {
  targetsVersion: number;
  snapshotVersion: number;
  timestampVersion: number;
}

/**
 * Signs and inserts the next versions of the online roles inside the caller's
 * locked transaction. A new targets map (or `resignTargets`) bumps targets,
 * which forces snapshot; the timestamp is always bumped.
 */
export async function bumpChain(
  trx: RepoTx,
  tenantId: string,
  now: Date,
  keys: OnlineKeys,
  change: { targets?: Record<string, TargetFile>; resignTargets?: boolean; resignSnapshot?: boolean },
): Promise<ChainVersions> {
  const curTargets = await mustLatest(trx, tenantId, 'targets');
  const curSnapshot = await mustLatest(trx, tenantId, 'snapshot');
  const curTimestamp = await mustLatest(trx, tenantId, 'timestamp');

  let targets = curTargets;
  if (change.targets !== undefined || change.resignTargets) {
    const map = change.targets ?? decodeTargets(curTargets.bytes).signed.targets;
    const md = buildTargets(curTargets.version + 1, now, map, keys.targets);
    targets = { version: curTargets.version + 1, bytes: encodeMetadata(md) };
    await insertMetadata(trx, tenantId, 'targets', targets.version, targets.bytes, tufExpires(now, 'targets'));
  }
  let snapshot = curSnapshot;
  if (targets !== curTargets || change.resignSnapshot) {
    const md = buildSnapshot(curSnapshot.version + 1, now, targets, keys.snapshot);
    snapshot = { version: curSnapshot.version + 1, bytes: encodeMetadata(md) };
    await insertMetadata(trx, tenantId, 'snapshot', snapshot.version, snapshot.bytes, tufExpires(now, 'snapshot'));
  }
  const ts = buildTimestamp(curTimestamp.version + 1, now, snapshot, keys.timestamp);
  await insertMetadata(trx, tenantId, 'timestamp', curTimestamp.version + 1, encodeMetadata(ts), tufExpires(now, 'timestamp'));
  await touchRepo(trx, tenantId);
  return { targetsVersion: targets.version, snapshotVersion: snapshot.version, timestampVersion: curTimestamp.version + 1 };
}

export async function mustLatest(trx: RepoDb | RepoTx, tenantId: string, role: 'root' | 'targets' | 'snapshot' | 'timestamp'): Promise<MetadataRow> {
  const row = await latestMetadata(trx, tenantId, role);
  if (!row) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no ${role} metadata`);
  return row;
}
