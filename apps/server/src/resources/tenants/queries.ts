import { isUniqueViolation, type Db } from '../../store/tx.js';

/**
 * The default tenant (a UUID), created on first start. Safe when two processes start
 * together: a partial unique index allows one default tenant, the loser reads the winner's.
 */
export async function ensureDefaultTenant(db: Db): Promise<string> {
  const existing = await db.selectFrom('tenants').select('id').where('is_default', '=', true).executeTakeFirst();
  if (existing) return existing.id;
  try {
    const row = await db.insertInto('tenants').values({ name: 'default', is_default: true }).returning('id').executeTakeFirstOrThrow();
    return row.id;
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    const row = await db.selectFrom('tenants').select('id').where('is_default', '=', true).executeTakeFirstOrThrow();
    return row.id;
  }
}

export async function createTenant(db: Db, name: string): Promise<string> {
  const row = await db.insertInto('tenants').values({ name, is_default: false }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}
