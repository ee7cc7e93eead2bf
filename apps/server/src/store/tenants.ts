import type { Kysely } from 'kysely';
import { hashPassword } from '../auth/password.js';
import type { Database } from './database.js';
import { countUsers, insertUser, isUniqueViolation } from './users.js';

/**
 * First start: the default tenant (a UUID), and its first admin when no user exists and
 * SVC_ADMIN_EMAIL/SVC_ADMIN_PASSWORD are set. Safe when two processes start together:
 * a partial unique index allows one default tenant, unique emails one admin.
 */
export async function ensureDefaultTenant(db: Kysely<Database>): Promise<string> {
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

export async function createTenant(db: Kysely<Database>, name: string): Promise<string> {
  const row = await db.insertInto('tenants').values({ name, is_default: false }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

/** Returns true when the admin was created now. */
export async function bootstrapAdmin(db: Kysely<Database>, tenantId: string, admin: { email: string; password: string } | undefined): Promise<boolean> {
  if (admin === undefined || (await countUsers(db)) > 0) return false;
  try {
    await insertUser(db, { tenantId, email: admin.email, displayName: 'Administrator', role: 'admin', passwordHash: await hashPassword(admin.password) });
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}
