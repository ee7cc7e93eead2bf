/**
 * The per-tenant evidence key: an Ed25519 key the service signs case-export manifests with,
 * stored like the signing repository's keys (`<SVC_DATA_DIR>/keys/<tenant>/evidence.pem`,
 * directory 0700, file 0600, shared by every server process through the same exclusive-create
 * rule). The database records every evidence key's public key and validity period
 * (`evidence_keys`); the file is used only when it holds the recorded current key. The first
 * use creates and records key 1; after that a missing or different file is KEY_UNAVAILABLE,
 * never a new key: a new key comes only from a rotation (`POST /evidence-keys/rotate`).
 *
 * A rotation writes the new key to `evidence.<key id hex>.pem` before its unit of work and
 * moves it to `evidence.pem` after the commit; a process that died in between leaves the
 * recorded key in that file, and the next use moves it into place.
 */
import { parsePrivateKeyPem, type PrivateKey } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import { SigningRepoError } from '../../signing-repo/errors.js';
import { generateSigningKey, KeyStore, type SigningKey } from '../../signing-repo/keys.js';
import type { Db } from '../../store/tx.js';
import { currentEvidenceKey, type EvidenceKeyRow } from './queries.js';

export interface EvidenceKey {
  privateKey: PrivateKey;
  keyid: string;
  publicKeyPem: string;
}

const CURRENT = 'evidence';
/** The file a rotation writes its new key to until the rotation commits. */
const pendingName = (keyid: string) => `evidence.${keyid.replace(/^sha256:/, '')}`;

function storeOf(keysRoot: string): KeyStore<string> {
  return new KeyStore<string>(keysRoot);
}

function asEvidenceKey(pem: string): EvidenceKey {
  const privateKey = parsePrivateKeyPem(pem);
  return { privateKey, keyid: privateKey.publicKey.keyid, publicKeyPem: privateKey.publicKey.pem };
}

/**
 * The key in `evidence.pem`, creating it when there is none (first use, before any key is
 * recorded). A file there that is not a readable key is the service's unusable key, like a
 * recorded key's (inspectEvidenceKey): KEY_UNAVAILABLE (503) naming it, never a caller's 400.
 */
export async function loadOrCreateEvidenceKeyFile(keysRoot: string, tenantId: string): Promise<EvidenceKey> {
  const store = storeOf(keysRoot);
  try {
    return asEvidenceKey((await store.loadOrCreate(tenantId, CURRENT)).pem);
  } catch (e) {
    if (!(e instanceof SigningRepoError) || e.code !== 'KEY_INVALID') throw e;
    const path = store.pathOf(tenantId, CURRENT);
    throw new ServerError(
      'KEY_UNAVAILABLE',
      `KEY_UNAVAILABLE: evidence key of tenant ${tenantId} is unreadable (${path}: ${e instanceof Error ? e.message : String(e)}); nothing was signed (no evidence key is recorded yet: restore the file, or remove it and the next export creates key 1)`,
    );
  }
}

/** The recorded key's file as it stands: usable, or why not, in one line naming the key, its tenant and its file. */
export type EvidenceKeyState = { state: 'ok'; key: EvidenceKey } | { state: 'missing' | 'unreadable' | 'mismatch'; problem: string };

/**
 * The file of the recorded current evidence key against the record: present, a readable
 * Ed25519 key, and the recorded one. An interrupted rotation's pending file holding the
 * recorded key is moved into place first. Used before signing and by the start-up key check.
 */
export async function inspectEvidenceKey(keysRoot: string, tenantId: string, recorded: EvidenceKeyRow): Promise<EvidenceKeyState> {
  const store = storeOf(keysRoot);
  const path = store.pathOf(tenantId, CURRENT);
  const label = `evidence key ${recorded.seq} (${recorded.keyid}) of tenant ${tenantId}`;
  let file: SigningKey | undefined;
  let unreadable: string | undefined;
  try {
    file = await store.load(tenantId, CURRENT);
  } catch (e) {
    unreadable = e instanceof Error ? e.message : String(e);
  }
  if (file !== undefined && file.spkiKeyId === recorded.keyid) return { state: 'ok', key: asEvidenceKey(file.pem) };
  const pending = await store.load(tenantId, pendingName(recorded.keyid)).catch(() => undefined);
  if (pending !== undefined && pending.spkiKeyId === recorded.keyid) {
    await store.replace(tenantId, CURRENT, pending);
    await store.remove(tenantId, pendingName(recorded.keyid));
    return { state: 'ok', key: asEvidenceKey(pending.pem) };
  }
  if (unreadable !== undefined) return { state: 'unreadable', problem: `${label} is unreadable (${path}: ${unreadable})` };
  if (file === undefined) return { state: 'missing', problem: `${label} is missing (${path})` };
  return { state: 'mismatch', problem: `${label} does not match the recorded public key: the file holds ${file.spkiKeyId} (${path})` };
}

/** The private key of the recorded current evidence key; KEY_UNAVAILABLE (503) naming it when its file is not usable. */
export async function recordedEvidenceKey(keysRoot: string, tenantId: string, recorded: EvidenceKeyRow): Promise<EvidenceKey> {
  const found = await inspectEvidenceKey(keysRoot, tenantId, recorded);
  if (found.state === 'ok') return found.key;
  throw new ServerError('KEY_UNAVAILABLE', `KEY_UNAVAILABLE: ${found.problem}; nothing was signed (restore it, or rotate the key)`);
}

/** Answers the tenant's current key for signing: the recorded one, or undefined when none is recorded yet. */
export async function currentSigningKey(db: Db, keysRoot: string, tenantId: string): Promise<EvidenceKey | undefined> {
  const recorded = await currentEvidenceKey(db, tenantId);
  return recorded === undefined ? undefined : recordedEvidenceKey(keysRoot, tenantId, recorded);
}

/**
 * A rotation's files around its unit of work: the new key is written to its pending file
 * (0600), `commit` records it (the rotation's unit of work, given the new key's id and public
 * key), then the file becomes `evidence.pem`; a commit that fails leaves no pending file.
 */
export async function rotateEvidenceKeyFile<T>(
  keysRoot: string,
  tenantId: string,
  commit: (next: { keyid: string; publicKeyPem: string }) => Promise<T>,
): Promise<T> {
  const store = storeOf(keysRoot);
  const stored = generateSigningKey();
  const pending = pendingName(stored.spkiKeyId);
  await store.replace(tenantId, pending, stored);
  const next = asEvidenceKey(stored.pem);
  let committed: T;
  try {
    committed = await commit({ keyid: next.keyid, publicKeyPem: next.publicKeyPem });
  } catch (e) {
    await store.remove(tenantId, pending);
    throw e;
  }
  await store.replace(tenantId, CURRENT, stored);
  await store.remove(tenantId, pending);
  return committed;
}
