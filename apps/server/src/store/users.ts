import { sql, type Kysely } from 'kysely';
import type { Database } from './database.js';

export interface UserRecord {
  id: string;
  tenant_id: string;
  email: string;
  display_name: string;
  role: string;
  created_at: Date;
}

const COLUMNS = ['id', 'tenant_id', 'email', 'display_name', 'role', 'created_at'] as const;

/** Login lookup: emails are unique service-wide, case-insensitively. */
export async function findUserForLogin(db: Kysely<Database>, email: string) {
  return db
    .selectFrom('users')
    .select([...COLUMNS, 'password_hash'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

export async function insertUser(
  db: Kysely<Database>,
  input: { tenantId: string; email: string; displayName: string; role: string; passwordHash: string },
): Promise<UserRecord> {
  return db
    .insertInto('users')
    .values({ tenant_id: input.tenantId, email: input.email, display_name: input.displayName, role: input.role, password_hash: input.passwordHash })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function getUser(db: Kysely<Database>, tenantId: string, id: string): Promise<UserRecord | undefined> {
  return db.selectFrom('users').select(COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export async function listUsers(db: Kysely<Database>, tenantId: string, limit: number, offset: number) {
  const [rows, total] = await Promise.all([
    db.selectFrom('users').select(COLUMNS).where('tenant_id', '=', tenantId).orderBy('email').limit(limit).offset(offset).execute(),
    db.selectFrom('users').select((eb) => eb.fn.countAll<string>().as('n')).where('tenant_id', '=', tenantId).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

export async function updateUser(
  db: Kysely<Database>,
  tenantId: string,
  id: string,
  patch: { display_name?: string; password_hash?: string },
): Promise<UserRecord | undefined> {
  return db.updateTable('users').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

export async function deleteUser(db: Kysely<Database>, tenantId: string, id: string): Promise<UserRecord | undefined> {
  return db.deleteFrom('users').where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

export async function countUsers(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('users').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Postgres unique violation (duplicate email, name, ...). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === '23505';
}
