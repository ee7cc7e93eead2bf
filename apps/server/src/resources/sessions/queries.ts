import type { Db } from '../../store/tx.js';

/** Server-side sessions: only the token's hash is stored; revocation is a timestamp. */
export interface SessionIdentity {
  session_id: string;
  tenant_id: string;
  user_id: string;
  email: string;
  role: string;
}

export async function createSession(db: Db, input: { tenantId: string; userId: string; tokenHash: string; expiresAt: Date }): Promise<string> {
  const row = await db
    .insertInto('sessions')
    .values({ tenant_id: input.tenantId, user_id: input.userId, token_hash: input.tokenHash, expires_at: input.expiresAt })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** One indexed lookup: live (not revoked, not expired) session joined with its user. */
export async function findLiveSession(db: Db, tokenHash: string, now: Date): Promise<SessionIdentity | undefined> {
  return db
    .selectFrom('sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .select(['s.id as session_id', 's.tenant_id', 's.user_id', 'u.email', 'u.role'])
    .where('s.token_hash', '=', tokenHash)
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .executeTakeFirst();
}

export async function revokeSession(db: Db, sessionId: string, now: Date): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', sessionId).where('revoked_at', 'is', null).execute();
}
