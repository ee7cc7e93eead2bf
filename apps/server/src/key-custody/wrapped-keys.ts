import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { keyIdOf } from '@svc/release-core';
import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import type { Db } from '../store/tx.js';
import { KekError, type Kek } from './kek.js';
import { deleteWrappedKey, getWrappedKey, insertWrappedKey, upsertWrappedKey, type WrappedKeyInsert, type WrappedKeyRow } from './queries.js';

/** Names one private key: a tenant's (`tenantId`) or the server's own (null), and its name (`tuf/targets`, `device-ca/<file>`, ...). */
export interface KeyRef {
  tenantId: string | null;
  name: string;
}

/** The row key and the wrap's additional authenticated data: `<tenant>/<name>` or `server/<name>`. */
export function keyIdOfRef(ref: KeyRef): string {
  return `${ref.tenantId ?? 'server'}/${ref.name}`;
}

/** A private key as stored: its PKCS#8 DER (only ever in memory), and what the row records. */
export interface UnwrappedKey {
  privateKey: KeyObject;
  /** The certificate stored beside the key, for the keys that keep one here (the server CA). */
  certificate: Uint8Array | undefined;
  publicKeyId: string;
}

/**
 * The private keys of the service in `wrapped_keys`, each wrapped by the KEK (kek.ts): every
 * process that can reach the database and opens the same KEK reads the same keys, whatever
 * its data directory holds. A key wrapped by another KEK is refused with a KekError naming
 * both KEKs (after a rewrap, the old KEK opens nothing).
 */
export class WrappedKeys {
  readonly db: Kysely<Database>;
  #kek: Promise<Kek> | undefined;
  readonly #openKek: () => Promise<Kek>;

  constructor(db: Kysely<Database>, kek: Kek | (() => Promise<Kek>)) {
    this.db = db;
    this.#openKek = typeof kek === 'function' ? kek : () => Promise.resolve(kek);
  }

  /** The KEK, opened on first use (a failure is asked again next time). */
  kek(): Promise<Kek> {
    if (this.#kek === undefined) {
      const p = this.#openKek();
      this.#kek = p;
      p.catch(() => {
        if (this.#kek === p) this.#kek = undefined;
      });
    }
    return this.#kek;
  }

  /** The key under `ref`, undefined when none is stored; KekError when the KEK does not open it. */
  async load(ref: KeyRef, db: Db = this.db): Promise<UnwrappedKey | undefined> {
    const row = await getWrappedKey(db, keyIdOfRef(ref));
    return row === undefined ? undefined : this.open(row);
  }

  /** Unwraps a stored row with this process's KEK. */
  async open(row: WrappedKeyRow): Promise<UnwrappedKey> {
    const kek = await this.kek();
    if (row.kek_id !== kek.id) {
      throw new KekError(`wrapped key ${row.key_id} is wrapped by KEK ${row.kek_id}, this server opened KEK ${kek.id}`);
    }
    const der = await kek.unwrap(Buffer.from(row.wrapped), Buffer.from(row.key_id));
    try {
      const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
      return { privateKey, certificate: row.certificate ?? undefined, publicKeyId: row.public_key_id };
    } catch (e) {
      throw new KekError(`wrapped key ${row.key_id} does not hold a PKCS#8 private key`, { cause: e });
    } finally {
      der.fill(0);
    }
  }

  /** The row that stores `privateKey` under `ref`, wrapped by the KEK. */
  async seal(ref: KeyRef, privateKey: KeyObject, certificate?: Uint8Array): Promise<WrappedKeyInsert> {
    const kek = await this.kek();
    const keyId = keyIdOfRef(ref);
    const der = privateKey.export({ format: 'der', type: 'pkcs8' });
    try {
      const wrapped = await kek.wrap(der, Buffer.from(keyId));
      const publicKeyId = keyIdOf(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }));
      return {
        keyId,
        tenantId: ref.tenantId,
        name: ref.name,
        publicKeyId,
        wrapAlg: kek.algorithm,
        kekId: kek.id,
        wrapped,
        ...(certificate ? { certificate } : {}),
      };
    } finally {
      der.fill(0);
    }
  }

  /** Stores the key unless `ref` already holds one; true when this call stored it. */
  async create(ref: KeyRef, privateKey: KeyObject, opts: { db?: Db; certificate?: Uint8Array } = {}): Promise<boolean> {
    return insertWrappedKey(opts.db ?? this.db, await this.seal(ref, privateKey, opts.certificate));
  }

  /** Stores the key under `ref`, replacing any key there. */
  async put(ref: KeyRef, privateKey: KeyObject, opts: { db?: Db; certificate?: Uint8Array } = {}): Promise<void> {
    await upsertWrappedKey(opts.db ?? this.db, await this.seal(ref, privateKey, opts.certificate));
  }

  async remove(ref: KeyRef, db: Db = this.db): Promise<boolean> {
    return deleteWrappedKey(db, keyIdOfRef(ref));
  }

  async close(): Promise<void> {
    const kek = this.#kek;
    this.#kek = undefined;
    if (kek) await (await kek).close();
  }
}
