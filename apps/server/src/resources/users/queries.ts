import { sql, type Selectable } from 'kysely';
import { ROLES, type Role } from '../../auth/permissions.js';
import type { UsersTable } from '../../store/core-tables.js';
import type { Db } from '../../store/tx.js';

/** A row of `users` as the queries below read it. */
export type UserRecord = Pick<Selectable<UsersTable>, (typeof COLUMNS)[number]>;

const COLUMNS = ['id', 'tenant_id', 'email', 'display_name', 'role', 'created_at'] as const;

/** Login lookup: emails are unique service-wide, case-insensitively. */
export async function findUserForLogin(db: Db, email: string) {
  return db
    .selectFrom('users')
    .select([...COLUMNS, 'password_hash'])
    .where(sql<string>`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

/** A user of the tenant with its password hash (profile password change). */
export async function getUserWithHash(db: Db, tenantId: string, id: string) {
  return db
    .selectFrom('users')
    .select([...COLUMNS, 'password_hash'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function insertUser(
  db: Db,
  input: { tenantId: string; email: string; displayName: string; role: string; passwordHash: string },
): Promise<UserRecord> {
  return db
    .insertInto('users')
    .values({ tenant_id: input.tenantId, email: input.email, display_name: input.displayName, role: input.role, password_hash: input.passwordHash })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function getUser(db: Db, tenantId: string, id: string): Promise<UserRecord | undefined> {
  return db.selectFrom('users').select(COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

export type UserCounts = Record<Role, number>;

/** spec §8: a page by email, `total` and `counts` by role, both over the tenant's users. */
export async function listUsers(db: Db, tenantId: string, limit: number, offset: number): Promise<{ rows: UserRecord[]; total: number; counts: UserCounts }> {
  const [rows, byRole] = await Promise.all([
    db.selectFrom('users').select(COLUMNS).where('tenant_id', '=', tenantId).orderBy('email').limit(limit).offset(offset).execute(),
    db
      .selectFrom('users')
      .select(['role', (eb) => eb.fn.countAll<string>().as('n')])
      .where('tenant_id', '=', tenantId)
      .groupBy('role')
      .execute(),
  ]);
  const counts = Object.fromEntries(ROLES.map((r) => [r, 0])) as UserCounts;
  for (const r of byRole) if (r.role in counts) counts[r.role as Role] = Number(r.n);
  return { rows, total: byRole.reduce((n, r) => n + Number(r.n), 0), counts };
}

export async function updateUser(
  db: Db,
  tenantId: string,
  id: string,
  patch: { display_name?: string; password_hash?: string },
): Promise<UserRecord | undefined> {
  return db.updateTable('users').set(patch).where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

export async function deleteUser(db: Db, tenantId: string, id: string): Promise<UserRecord | undefined> {
  return db.deleteFrom('users').where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

/** Users of every tenant (first start creates an admin only when there is none). */
export async function countUsers(db: Db): Promise<number> {
  const row = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Locks the tenant's admin rows in id order and answers their ids: a role change that could
 * leave no admin counts them under the lock, so two admins demoting each other at once cannot
 * both succeed.
 */
export async function lockAdmins(db: Db, tenantId: string): Promise<string[]> {
  const rows = await db.selectFrom('users').select('id').where('tenant_id', '=', tenantId).where('role', '=', 'admin').orderBy('id').forUpdate().execute();
  return rows.map((r) => r.id);
}

export async function setUserRole(db: Db, tenantId: string, id: string, role: Role): Promise<UserRecord | undefined> {
  return db.updateTable('users').set({ role }).where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}
