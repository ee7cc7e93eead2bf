import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { keyIdOf, tufKeyId } from '@svc/release-core';
import { Key, Signature, type Root } from '@tufjs/models';
import { SigningRepoError } from './errors.js';
import type { TufRole } from './expiry.js';
import { assertTenantId } from './tenant-id.js';
import { KekError } from '../key-custody/kek.js';
import { getWrappedKey } from '../key-custody/queries.js';
import { keyIdOfRef, type KeyRef, type UnwrappedKey, type WrappedKeys } from '../key-custody/wrapped-keys.js';
import type { Db } from '../store/tx.js';

/** An Ed25519 signing key with its TUF public form. */
export interface SigningKey {
  /**
   * contracts §1: the key id inside TUF metadata, the TUF specification's (release-core
   * `tufKeyId`): what root names the key by and what its signatures carry.
   */
  keyId: string;
  /** contracts §1: `sha256:` + hex SHA-256 of the SPKI DER, the id outside TUF metadata. */
  spkiKeyId: string;
  /** The key as root lists it, under `keyId`. */
  tufKey: Key;
  privateKey: KeyObject;
  /** PKCS#8 PEM (contracts §1). */
  pem: string;
}

export function generateSigningKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return signingKeyFromObject(privateKey);
}

/** Parses a PKCS#8 PEM Ed25519 private key; KEY_INVALID naming `field` otherwise. */
export function signingKeyFromPem(pem: unknown, field = 'key'): SigningKey {
  if (typeof pem !== 'string' || !pem.includes('-----BEGIN PRIVATE KEY-----') || pem.length > 4096) {
    throw new SigningRepoError('KEY_INVALID', `${field} must be a PKCS#8 PEM private key`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (e) {
    throw new SigningRepoError('KEY_INVALID', `${field} is not a readable PKCS#8 PEM private key`, { cause: e });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new SigningRepoError('KEY_INVALID', `${field} must be an Ed25519 key, got ${key.asymmetricKeyType ?? 'unknown'}`);
  }
  return signingKeyFromObject(key);
}

export function signingKeyFromObject(privateKey: KeyObject): SigningKey {
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  // An Ed25519 SPKI is a fixed 12-byte prefix followed by the 32-byte public key.
  const keyVal = { public: spki.subarray(spki.length - 32).toString('hex') };
  const keyId = tufKeyId('ed25519', 'ed25519', keyVal);
  const tufKey = new Key({ keyID: keyId, keyType: 'ed25519', scheme: 'ed25519', keyVal });
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  return { keyId, spkiKeyId: keyIdOf(spki), tufKey, privateKey, pem };
}

/**
 * The key as `root` names it: under its TUF key id, or under its `sha256:` + SPKI id in a
 * repository whose root still uses that form (until the key id rotation, key-id-upgrade.ts).
 * The returned key signs under that id. Undefined when root lists neither id with this
 * public key.
 */
export function keyAsNamedBy(root: Root, key: SigningKey): SigningKey | undefined {
  for (const id of [key.keyId, key.spkiKeyId]) {
    const listed = root.keys[id];
    if (listed?.keyType === 'ed25519' && listed.keyVal['public'] === key.tufKey.keyVal['public']) return id === key.keyId ? key : { ...key, keyId: id };
  }
  return undefined;
}

/** The signer callback @tufjs/models' Metadata.sign expects (hex Ed25519 signature), under `key.keyId`. */
export function tufSigner(key: SigningKey): (data: Buffer) => Signature {
  return (data) => new Signature({ keyID: key.keyId, sig: sign(null, data, key.privateKey).toString('hex') });
}

/**
 * Signing keys of one kind (the TUF roles; the evidence keys of case exports), wrapped by the
 * KEK in `wrapped_keys` under `<tenant>/<kind>/<name>` (key-custody/wrapped-keys.ts). Several
 * server processes on different hosts share them through the database: creation is an insert
 * that keeps the first key when two processes race, so all end up with one key set.
 */
export class KeyStore<Name extends string = TufRole> {
  readonly wrapped: WrappedKeys;
  readonly kind: string;

  constructor(wrapped: WrappedKeys, kind = 'tuf') {
    this.wrapped = wrapped;
    this.kind = kind;
  }

  refOf(tenantId: string, role: Name): KeyRef {
    return { tenantId: assertTenantId(tenantId), name: `${this.kind}/${role}` };
  }

  /** How failures name where the key is stored: `wrapped key <tenant>/<kind>/<name>`. */
  pathOf(tenantId: string, role: Name): string {
    return `wrapped key ${keyIdOfRef(this.refOf(tenantId, role))}`;
  }

  /**
   * Loads a role key; undefined when none is stored (e.g. root key exported and deleted).
   * KEY_UNAVAILABLE when the KEK does not open it, KEY_INVALID when it is not Ed25519.
   */
  async load(tenantId: string, role: Name, db?: Db): Promise<SigningKey | undefined> {
    let found: UnwrappedKey | undefined;
    try {
      found = await this.wrapped.load(this.refOf(tenantId, role), db);
    } catch (e) {
      if (e instanceof KekError) throw new SigningRepoError('KEY_UNAVAILABLE', e.message, { cause: e });
      throw e;
    }
    if (found === undefined) return undefined;
    if (found.privateKey.asymmetricKeyType !== 'ed25519') {
      throw new SigningRepoError('KEY_INVALID', `${role} key must be an Ed25519 key, got ${found.privateKey.asymmetricKeyType ?? 'unknown'}`);
    }
    return signingKeyFromObject(found.privateKey);
  }

  async has(tenantId: string, role: Name): Promise<boolean> {
    return (await getWrappedKey(this.wrapped.db, keyIdOfRef(this.refOf(tenantId, role)))) !== undefined;
  }

  /** Returns the role key, creating it when missing; concurrent callers get the same key. */
  async loadOrCreate(tenantId: string, role: Name, db?: Db): Promise<SigningKey> {
    const existing = await this.load(tenantId, role, db);
    if (existing) return existing;
    await this.wrapped.create(this.refOf(tenantId, role), generateSigningKey().privateKey, db ? { db } : {});
    const stored = await this.load(tenantId, role, db);
    if (!stored) throw new SigningRepoError('KEY_MISMATCH', `${role} key vanished while being created`);
    return stored;
  }

  /** Replaces (or creates) a role key, inside `db` when it is the caller's transaction. */
  async replace(tenantId: string, role: Name, key: SigningKey, db?: Db): Promise<void> {
    await this.wrapped.put(this.refOf(tenantId, role), key.privateKey, db ? { db } : {});
  }

  async remove(tenantId: string, role: Name, db?: Db): Promise<boolean> {
    return this.wrapped.remove(this.refOf(tenantId, role), db);
  }
}
