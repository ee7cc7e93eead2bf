/**
 * Trusted authorizer keys (spec §4 rule 3: "the Ed25519 public key is registered as a trusted
 * authorizer key"). Revocation keeps the row (evidence of what was trusted when) and removes
 * the key from every later verification. Every function is tenant-scoped.
 */
import { parsePublicKeyPem, type PublicKey, normalizeUuid } from '@svc/release-core';
import type { Selectable } from 'kysely';
import type { AuthorizerKeysTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';

export type AuthorizerKeyRow = Selectable<AuthorizerKeysTable>;

/** Inserts the key; a key id already registered raises the database's unique violation. */
export async function insertAuthorizerKey(db: Db, tenantId: string, key: { name: string; keyid: string; pem: string }, now: Date): Promise<AuthorizerKeyRow> {
  return db
    .insertInto('authorizer_keys')
    .values({ tenant_id: tenantId, name: key.name, keyid: key.keyid, public_key_pem: key.pem, created_at: now, revoked_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listAuthorizerKeys(db: Db, tenantId: string, limit: number, offset: number): Promise<AuthorizerKeyRow[]> {
  return db
    .selectFrom('authorizer_keys')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** spec §8: the tenant's keys, how many, and how many are revoked. */
export async function authorizerKeyCounts(db: Db, tenantId: string): Promise<{ total: number; revoked: number }> {
  const c = await db
    .selectFrom('authorizer_keys')
    .select((eb) => [eb.fn.countAll<string>().as('total'), eb.fn.count<string>('revoked_at').as('revoked')])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  return { total: Number(c.total), revoked: Number(c.revoked) };
}

export async function getAuthorizerKey(db: Db, tenantId: string, id: string): Promise<AuthorizerKeyRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db.selectFrom('authorizer_keys').selectAll().where('tenant_id', '=', tenantId).where('id', '=', uuid).executeTakeFirst();
}

/** Marks the key revoked at `now` unless it already is (the first revocation time is kept). */
export async function setRevoked(db: Db, tenantId: string, id: string, now: Date): Promise<void> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return;
  await db
    .updateTable('authorizer_keys')
    .set({ revoked_at: now })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', uuid)
    .where('revoked_at', 'is', null)
    .execute();
}

/** The keys a release may be verified against right now: registered and not revoked. */
export async function trustedAuthorizerKeys(db: Db, tenantId: string): Promise<PublicKey[]> {
  const rows = await db.selectFrom('authorizer_keys').select('public_key_pem').where('tenant_id', '=', tenantId).where('revoked_at', 'is', null).execute();
  return rows.map((r) => parsePublicKeyPem(r.public_key_pem));
}
