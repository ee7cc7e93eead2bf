import type { Selectable } from 'kysely';
import type { Db } from '../store/tx.js';
import type { WrappedKeysTable } from './tables.js';

/** The only SQL of the wrapped keys (migration 0050). */
export type WrappedKeyRow = Selectable<WrappedKeysTable>;

export interface WrappedKeyInsert {
  keyId: string;
  tenantId: string | null;
  name: string;
  publicKeyId: string;
  certificate?: Uint8Array;
  wrapAlg: string;
  kekId: string;
  wrapped: Uint8Array;
}

export async function getWrappedKey(db: Db, keyId: string): Promise<WrappedKeyRow | undefined> {
  return db.selectFrom('wrapped_keys').selectAll().where('key_id', '=', keyId).executeTakeFirst();
}

/** Inserts unless the key id exists; true when this call inserted (concurrent creators keep one key). */
export async function insertWrappedKey(db: Db, k: WrappedKeyInsert): Promise<boolean> {
  const r = await db
    .insertInto('wrapped_keys')
    .values({
      key_id: k.keyId,
      tenant_id: k.tenantId,
      name: k.name,
      public_key_id: k.publicKeyId,
      certificate: k.certificate ?? null,
      wrap_alg: k.wrapAlg,
      kek_id: k.kekId,
      wrapped: k.wrapped,
    })
    .onConflict((oc) => oc.column('key_id').doNothing())
    .returning('key_id')
    .executeTakeFirst();
  return r !== undefined;
}

/** Inserts or replaces the key under `keyId`. */
export async function upsertWrappedKey(db: Db, k: WrappedKeyInsert): Promise<void> {
  const values = {
    public_key_id: k.publicKeyId,
    certificate: k.certificate ?? null,
    wrap_alg: k.wrapAlg,
    kek_id: k.kekId,
    wrapped: k.wrapped,
  };
  await db
    .insertInto('wrapped_keys')
    .values({ key_id: k.keyId, tenant_id: k.tenantId, name: k.name, ...values })
    .onConflict((oc) => oc.column('key_id').doUpdateSet({ ...values, wrapped_at: new Date() }))
    .execute();
}

export async function deleteWrappedKey(db: Db, keyId: string): Promise<boolean> {
  const r = await db.deleteFrom('wrapped_keys').where('key_id', '=', keyId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Every wrapped key, locked for a rewrap when `forUpdate`. */
export async function allWrappedKeys(db: Db, forUpdate = false): Promise<WrappedKeyRow[]> {
  const q = db.selectFrom('wrapped_keys').selectAll().orderBy('key_id');
  return (forUpdate ? q.forUpdate() : q).execute();
}

/** A rewrap's one change of a row: same key, new KEK. */
export async function rewrapKey(db: Db, keyId: string, k: { wrapAlg: string; kekId: string; wrapped: Uint8Array }, at: Date): Promise<void> {
  await db.updateTable('wrapped_keys').set({ wrap_alg: k.wrapAlg, kek_id: k.kekId, wrapped: k.wrapped, wrapped_at: at }).where('key_id', '=', keyId).execute();
}
