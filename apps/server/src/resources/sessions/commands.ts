import { DUMMY_HASH_PROMISE, verifyPassword } from '../../auth/password.js';
import { isRole } from '../../auth/permissions.js';
import { newSecret } from '../../auth/secrets.js';
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import type { Command } from '../unit-of-work.js';
import { findUserForLogin, type UserRecord } from '../users/queries.js';
import { createSession, revokeSession } from './queries.js';

/**
 * The user an email and password name, or INVALID_CREDENTIALS. Before the unit of work: the
 * tenant and actor of the login are this user's, and scrypt never runs inside a transaction.
 * Unknown emails cost the same scrypt work, so timing does not reveal which emails exist.
 */
export async function checkLogin(db: Db, email: string, password: string): Promise<UserRecord> {
  const user = await findUserForLogin(db, email);
  const ok = await verifyPassword(password, user?.password_hash ?? (await DUMMY_HASH_PROMISE));
  if (!user || !ok || !isRole(user.role)) throw new ServerError('INVALID_CREDENTIALS', 'email or password is incorrect');
  const { password_hash: _hash, ...record } = user;
  return record;
}

/** POST /auth/login: a new session of the user (run as that user); the token is shown once. */
export const startSession: Command<{ userId: string; ttlSeconds: number }, { token: string }> = async (uow, { userId, ttlSeconds }) => {
  const token = newSecret('svcs');
  await createSession(uow.trx, { tenantId: uow.tenant, userId, tokenHash: token.hash, expiresAt: new Date(uow.now.getTime() + ttlSeconds * 1000) });
  await uow.audit({ action: 'session.login', target: `user:${userId}` });
  return { token: token.plaintext };
};

/** POST /auth/logout: the caller's session is revoked. */
export const endSession: Command<{ sessionId: string; userId: string | null }, void> = async (uow, { sessionId, userId }) => {
  await revokeSession(uow.trx, sessionId, uow.now);
  await uow.audit({ action: 'session.logout', target: `user:${userId}` });
};
