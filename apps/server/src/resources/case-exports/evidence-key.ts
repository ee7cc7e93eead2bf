/**
 * The per-tenant evidence key: an Ed25519 key the service signs case-export manifests with,
 * stored like the signing repository's keys: wrapped by the KEK in `wrapped_keys` under
 * `<tenant>/evidence/evidence` and shared by every server process through the database. The
 * database records every evidence key's public key and validity period (`evidence_keys`); the
 * stored key is used only when it is the recorded current key. The first use creates and
 * records key 1 in one unit of work; after that a missing or different key is
 * KEY_UNAVAILABLE, never a new key: a new key comes only from a rotation
 * (`POST /evidence-keys/rotate`), which stores the new key in the rotation's unit of work.
 *
 * Data directories from before the KEK kept a rotation's new key in `evidence.<key id hex>.pem`
 * until the rotation committed; imported as `evidence/evidence.<key id hex>`, such a key is
 * moved into place at the next use when it is the recorded one.
 */
import { parsePrivateKeyPem, type PrivateKey } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import { SigningRepoError } from '../../signing-repo/errors.js';
import { generateSigningKey, KeyStore, type SigningKey } from '../../signing-repo/keys.js';
import type { Db } from '../../store/tx.js';
import type { WrappedKeys } from '../../key-custody/wrapped-keys.js';
import { currentEvidenceKey, type EvidenceKeyRow } from './queries.js';

export interface EvidenceKey {
  privateKey: PrivateKey;
  keyid: string;
  publicKeyPem: string;
}

const CURRENT = 'evidence';
/** The file a rotation writes its new key to until the rotation commits. */
const pendingName = (keyid: string) => `evidence.${keyid.replace(/^sha256:/, '')}`;

function storeOf(keys: WrappedKeys): KeyStore<string> {
  return new KeyStore<string>(keys, 'evidence');
}

function asEvidenceKey(pem: string): EvidenceKey {
  const privateKey = parsePrivateKeyPem(pem);
  return { privateKey, keyid: privateKey.publicKey.keyid, publicKeyPem: privateKey.publicKey.pem };
}

/** A first evidence key to record: the stored one (a data directory's older key), or a new one the recording stores. */
export interface FirstEvidenceKey {
  key: EvidenceKey;
  /** Stores the new key inside the recording's unit of work; false when another process stored one first. Absent for a stored key. */
  store?: (db: Db) => Promise<boolean>;
}

/**
 * The key to record as key 1 on first use (before any key is recorded): the one stored under
 * `evidence` when there is one, else a new key that the recording's unit of work stores. A
 * stored key that does not open is the service's unusable key: KEY_UNAVAILABLE (503) naming
 * it, never a caller's 400.
 */
export async function firstEvidenceKey(keys: WrappedKeys, tenantId: string): Promise<FirstEvidenceKey> {
  const store = storeOf(keys);
  let existing: SigningKey | undefined;
  try {
    existing = await store.load(tenantId, CURRENT);
  } catch (e) {
    if (!(e instanceof SigningRepoError)) throw e;
    throw new ServerError(
      'KEY_UNAVAILABLE',
      `KEY_UNAVAILABLE: evidence key of tenant ${tenantId} is unreadable (${store.pathOf(tenantId, CURRENT)}: ${e.message}); nothing was signed (no evidence key is recorded yet: restore it or the KEK)`,
    );
  }
  if (existing !== undefined) return { key: asEvidenceKey(existing.pem) };
  const created = generateSigningKey();
  return {
    key: asEvidenceKey(created.pem),
    store: (db) => keys.create(store.refOf(tenantId, CURRENT), created.privateKey, { db }),
  };
}

/** The recorded key as stored: usable, or why not, in one line naming the key, its tenant and where it is stored. */
export type EvidenceKeyState = { state: 'ok'; key: EvidenceKey } | { state: 'missing' | 'unreadable' | 'mismatch'; problem: string };

/**
 * The stored current evidence key against the record: present, opened by the KEK, an
 * Ed25519 key, and the recorded one. An imported pending key of an interrupted rotation
 * holding the recorded key is moved into place first. Used before signing and by the start-up key check.
 */
export async function inspectEvidenceKey(keys: WrappedKeys, tenantId: string, recorded: EvidenceKeyRow): Promise<EvidenceKeyState> {
  const store = storeOf(keys);
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
    await keys.db.transaction().execute(async (trx) => {
      await store.replace(tenantId, CURRENT, pending, trx);
      await store.remove(tenantId, pendingName(recorded.keyid), trx);
    });
    return { state: 'ok', key: asEvidenceKey(pending.pem) };
  }
  if (unreadable !== undefined) return { state: 'unreadable', problem: `${label} is unreadable (${path}: ${unreadable})` };
  if (file === undefined) return { state: 'missing', problem: `${label} is missing (${path})` };
  return { state: 'mismatch', problem: `${label} does not match the recorded public key: it is ${file.spkiKeyId} (${path})` };
}

/** The private key of the recorded current evidence key; KEY_UNAVAILABLE (503) naming it when it is not usable. */
export async function recordedEvidenceKey(keys: WrappedKeys, tenantId: string, recorded: EvidenceKeyRow): Promise<EvidenceKey> {
  const found = await inspectEvidenceKey(keys, tenantId, recorded);
  if (found.state === 'ok') return found.key;
  throw new ServerError('KEY_UNAVAILABLE', `KEY_UNAVAILABLE: ${found.problem}; nothing was signed (restore it, or rotate the key)`);
}

/** Answers the tenant's current key for signing: the recorded one, or undefined when none is recorded yet. */
export async function currentSigningKey(db: Db, keys: WrappedKeys, tenantId: string): Promise<EvidenceKey | undefined> {
  const recorded = await currentEvidenceKey(db, tenantId);
  return recorded === undefined ? undefined : recordedEvidenceKey(keys, tenantId, recorded);
}

/**
 * A rotation's new key: `commit` records it (the rotation's unit of work, given the new key's
 * id, public key and `store`, which writes the wrapped key inside that unit of work), so the
 * new key, its record and the audit row commit together or not at all.
 */
export async function rotateEvidenceKeyFile<T>(
  keys: WrappedKeys,
  tenantId: string,
  commit: (next: { keyid: string; publicKeyPem: string; store: (db: Db) => Promise<void> }) => Promise<T>,
): Promise<T> {
  const store = storeOf(keys);
  const stored = generateSigningKey();
  const next = asEvidenceKey(stored.pem);
  return commit({ keyid: next.keyid, publicKeyPem: next.publicKeyPem, store: (db) => store.replace(tenantId, CURRENT, stored, db) });
}
