import { sql, type Selectable } from 'kysely';
import { PREPARE_MARK } from '../../store/prepared.js';
import type { ApiKeysTable } from '../../store/core-tables.js';
import type { Db } from '../../store/tx.js';

/** A row of `api_keys` as the queries below read it. */
export type ApiKeyRecord = Pick<Selectable<ApiKeysTable>, (typeof COLUMNS)[number]>;

const COLUMNS = ['id', 'tenant_id', 'name', 'role', 'prefix', 'created_at', 'last_used_at', 'revoked_at'] as const;

export async function insertApiKey(
  db: Db,
  input: { tenantId: string; name: string; role: string; prefix: string; keyHash: string; createdBy: string | null },
): Promise<ApiKeyRecord> {
  return db
    .insertInto('api_keys')
    .values({ tenant_id: input.tenantId, name: input.name, role: input.role, prefix: input.prefix, key_hash: input.keyHash, created_by: input.createdBy })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/** The hot path of API-key auth: one lookup on the unique hash index. */
export async function findLiveApiKey(db: Db, keyHash: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await sql<ApiKeyRecord>`${sql.raw(PREPARE_MARK)} SELECT ${sql.raw(COLUMNS.join(', '))} FROM api_keys
    WHERE key_hash = ${keyHash} AND revoked_at IS NULL`.execute(db);
  return rows[0];
}

/**
 * Last-used time with one-minute resolution: writing on every request would turn each
 * read into a write; the guard in SQL keeps it correct across processes.
 */
export async function touchApiKey(db: Db, id: string, now: Date): Promise<void> {
  const staleBefore = new Date(now.getTime() - 60_000);
  await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
    .execute();
}

export interface ApiKeyCounts {
  active: number;
  revoked: number;
}

/** spec §8: a page in creation order, `total` and `counts` (active, revoked) over the tenant's keys. */
export async function listApiKeys(
  db: Db,
  tenantId: string,
  limit: number,
  offset: number,
): Promise<{ rows: ApiKeyRecord[]; total: number; counts: ApiKeyCounts }> {
  const [rows, c] = await Promise.all([
    db.selectFrom('api_keys').select(COLUMNS).where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute(),
    db
      .selectFrom('api_keys')
      .select((eb) => [eb.fn.countAll<string>().as('total'), eb.fn.count<string>('revoked_at').as('revoked')])
      .where('tenant_id', '=', tenantId)
      .executeTakeFirstOrThrow(),
  ]);
  const total = Number(c.total);
  const revoked = Number(c.revoked);
  return { rows, total, counts: { active: total - revoked, revoked } };
}

/** Revokes a live key of this tenant; undefined when none (or another tenant's: 404 either way). */
export async function revokeApiKey(db: Db, tenantId: string, id: string, now: Date): Promise<ApiKeyRecord | undefined> {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .returning(COLUMNS)
    .executeTakeFirst();
}
