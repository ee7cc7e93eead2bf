import { hashPassword } from '../../auth/password.js';
import { isUniqueViolation, type Db } from '../../store/tx.js';
import { countUsers, insertUser } from '../users/queries.js';

/**
 * First start: the tenant's first admin when no user exists yet and SVC_ADMIN_EMAIL /
 * SVC_ADMIN_PASSWORD are set. Two processes starting together create one (unique emails).
 * Returns true when the admin was created now.
 */
export async function bootstrapAdmin(db: Db, tenantId: string, admin: { email: string; password: string } | undefined): Promise<boolean> {
  if (admin === undefined || (await countUsers(db)) > 0) return false;
  try {
    await insertUser(db, { tenantId, email: admin.email, displayName: 'Administrator', role: 'admin', passwordHash: await hashPassword(admin.password) });
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}
