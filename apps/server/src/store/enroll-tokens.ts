import { sql, type Kysely } from 'kysely';
import { hashSecret, plausibleSecret } from '../auth/secrets.js';
import { ServerError } from '../errors/server-error.js';
import type { Database } from './database.js';

export interface EnrollTokenRecord {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  max_uses: number;
  uses: number;
  expires_at: Date;
  created_by: string | null;
  created_at: Date;
}

const COLUMNS = ['id', 'tenant_id', 'name', 'prefix', 'max_uses', 'uses', 'expires_at', 'created_by', 'created_at'] as const;

export async function insertEnrollToken(
  db: Kysely<Database>,
  input: { tenantId: string; name: string; prefix: string; secretHash: string; maxUses: number; expiresAt: Date; createdBy: string },
): Promise<EnrollTokenRecord> {
  return db
    .insertInto('enroll_tokens')
    .values({ tenant_id: input.tenantId, name: input.name, prefix: input.prefix, secret_hash: input.secretHash, max_uses: input.maxUses, expires_at: input.expiresAt, created_by: input.createdBy })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function listEnrollTokens(db: Kysely<Database>, tenantId: string, limit: number, offset: number) {
  const [rows, total] = await Promise.all([
    db.selectFrom('enroll_tokens').select(COLUMNS).where('tenant_id', '=', tenantId).orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset).execute(),
    db.selectFrom('enroll_tokens').select((eb) => eb.fn.countAll<string>().as('n')).where('tenant_id', '=', tenantId).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

export async function deleteEnrollToken(db: Kysely<Database>, tenantId: string, id: string): Promise<EnrollTokenRecord | undefined> {
  return db.deleteFrom('enroll_tokens').where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

/**
 * For the device channel: spends one use of an enrollment token and returns its tenant.
 * Atomic: one conditional UPDATE (uses < max_uses AND not expired), so concurrent
 * enrollments on any number of processes never exceed the limit. On refusal, a second
 * read says why (unknown, expired or used up) for a clear error.
 */
export async function consumeEnrollToken(db: Kysely<Database>, secret: string, now: Date): Promise<{ tenantId: string; tokenId: string }> {
  if (!plausibleSecret(secret)) throw new ServerError('ENROLL_TOKEN_INVALID', 'enrollment token: unknown');
  const hash = hashSecret(secret);
  const row = await db
    .updateTable('enroll_tokens')
    .set({ uses: sql`uses + 1` })
    .where('secret_hash', '=', hash)
    .where('expires_at', '>', now)
    .where(sql<boolean>`uses < max_uses`)
    .returning(['id', 'tenant_id'])
    .executeTakeFirst();
  if (row) return { tenantId: row.tenant_id, tokenId: row.id };
  const existing = await db.selectFrom('enroll_tokens').select(['expires_at', 'uses', 'max_uses']).where('secret_hash', '=', hash).executeTakeFirst();
  if (!existing) throw new ServerError('ENROLL_TOKEN_INVALID', 'enrollment token: unknown');
  if (existing.expires_at <= now) throw new ServerError('ENROLL_TOKEN_EXPIRED', 'enrollment token: expired');
  throw new ServerError('ENROLL_TOKEN_EXHAUSTED', `enrollment token: all ${existing.max_uses} uses spent`);
}
