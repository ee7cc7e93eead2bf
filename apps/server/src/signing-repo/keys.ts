import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { chmod, link, mkdir, readFile, unlink, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { keyIdOf, tufKeyId } from '@svc/release-core';
import { Key, Signature, type Root } from '@tufjs/models';
import { SigningRepoError } from './errors.js';
import type { TufRole } from './expiry.js';
import { assertTenantId } from './tenant-id.js';

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

function signingKeyFromObject(privateKey: KeyObject): SigningKey {
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
 * Key files under `SVC_DATA_DIR/keys/<tenant>/<role>.pem`, directory 0700, files
 * 0600. Several server processes must share this directory (or a secrets store
 * behind this class): creation is exclusive (write a temp file, then link(2),
 * which fails if another process won), so all processes end up with one key set. `Name` is
 * the key file names a store holds (the TUF roles; the evidence key of case exports).
 */
export class KeyStore<Name extends string = TufRole> {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  dirOf(tenantId: string): string {
    return join(this.root, assertTenantId(tenantId));
  }

  pathOf(tenantId: string, role: Name): string {
    return join(this.dirOf(tenantId), `${role}.pem`);
  }

  /** Loads a role key; undefined when the file does not exist (e.g. root key exported and deleted). */
  async load(tenantId: string, role: Name): Promise<SigningKey | undefined> {
    let pem: string;
    try {
      pem = await readFile(this.pathOf(tenantId, role), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    return signingKeyFromPem(pem, `${role} key file`);
  }

  /** Returns the role key, creating it when missing; concurrent callers get the same key. */
  async loadOrCreate(tenantId: string, role: Name): Promise<SigningKey> {
    const existing = await this.load(tenantId, role);
    if (existing) return existing;
    const key = generateSigningKey();
    const tmp = await this.#writeTemp(tenantId, role, key.pem);
    try {
      await link(tmp, this.pathOf(tenantId, role));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
    const stored = await this.load(tenantId, role);
    if (!stored) throw new SigningRepoError('KEY_MISMATCH', `${role} key file vanished while being created`);
    return stored;
  }

  /** Atomically replaces (or creates) a role key file. */
  async replace(tenantId: string, role: Name, key: SigningKey): Promise<void> {
    const tmp = await this.#writeTemp(tenantId, role, key.pem);
    await rename(tmp, this.pathOf(tenantId, role));
  }

  async remove(tenantId: string, role: Name): Promise<boolean> {
    try {
      await unlink(this.pathOf(tenantId, role));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
  }

  async #writeTemp(tenantId: string, role: Name, pem: string): Promise<string> {
    const dir = this.dirOf(tenantId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    const tmp = join(dir, `.${role}.${randomUUID()}.tmp`);
    // The create mode is filtered by the umask; chmod makes it exactly 0600 either way.
    await writeFile(tmp, pem, { mode: 0o600, flag: 'wx' });
    await chmod(tmp, 0o600);
    return tmp;
  }
}
