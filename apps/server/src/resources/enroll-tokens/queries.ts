import { sql, type Selectable } from 'kysely';
import { hashSecret, plausibleSecret } from '../../auth/secrets.js';
import { ServerError } from '../../errors/server-error.js';
import type { EnrollTokensTable } from '../../store/core-tables.js';
import type { Db } from '../../store/tx.js';

/** A row of `enroll_tokens` as the queries below read it. */
export type EnrollTokenRecord = Pick<Selectable<EnrollTokensTable>, (typeof COLUMNS)[number]>;

const COLUMNS = ['id', 'tenant_id', 'name', 'prefix', 'max_uses', 'uses', 'expires_at', 'created_by', 'created_at'] as const;

export async function insertEnrollToken(
  db: Db,
  input: { tenantId: string; name: string; prefix: string; secretHash: string; maxUses: number; expiresAt: Date; createdBy: string },
): Promise<EnrollTokenRecord> {
  return db
    .insertInto('enroll_tokens')
    .values({
      tenant_id: input.tenantId,
      name: input.name,
      prefix: input.prefix,
      secret_hash: input.secretHash,
      max_uses: input.maxUses,
      expires_at: input.expiresAt,
      created_by: input.createdBy,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export const ENROLL_TOKEN_STATUSES = ['active', 'expired', 'exhausted'] as const;
export type EnrollTokenStatus = (typeof ENROLL_TOKEN_STATUSES)[number];

/**
 * One token's state at `now`, by the rule of the counts below and of enrollment
 * (`refusal`): expired whatever its uses once `expires_at` has passed, else used up.
 */
export function enrollTokenStatus(t: { expires_at: Date; uses: number; max_uses: number }, now: Date): EnrollTokenStatus {
  if (t.expires_at <= now) return 'expired';
  if (t.uses >= t.max_uses) return 'exhausted';
  return 'active';
}

/** A token's state at `now`: an expired token is `expired` whatever its uses (as enrollment reports it). */
export interface EnrollTokenCounts {
  active: number;
  expired: number;
  exhausted: number;
}

/** spec §8: a page, newest first; `total` and `counts` by state at `now`, over the tenant's tokens. */
export async function listEnrollTokens(
  db: Db,
  tenantId: string,
  now: Date,
  limit: number,
  offset: number,
): Promise<{ rows: EnrollTokenRecord[]; total: number; counts: EnrollTokenCounts }> {
  const [rows, c] = await Promise.all([
    db
      .selectFrom('enroll_tokens')
      .select(COLUMNS)
      .where('tenant_id', '=', tenantId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .limit(limit)
      .offset(offset)
      .execute(),
    sql<{ total: string; expired: string; exhausted: string }>`
      SELECT count(*) AS total,
        count(*) FILTER (WHERE expires_at <= ${now}) AS expired,
        count(*) FILTER (WHERE expires_at > ${now} AND uses >= max_uses) AS exhausted
      FROM enroll_tokens WHERE tenant_id = ${tenantId}`.execute(db),
  ]);
  const row = c.rows[0]!;
  const total = Number(row.total);
  const expired = Number(row.expired);
  const exhausted = Number(row.exhausted);
  return { rows, total, counts: { active: total - expired - exhausted, expired, exhausted } };
}

export async function deleteEnrollToken(db: Db, tenantId: string, id: string): Promise<EnrollTokenRecord | undefined> {
  return db.deleteFrom('enroll_tokens').where('tenant_id', '=', tenantId).where('id', '=', id).returning(COLUMNS).executeTakeFirst();
}

/** A token's tenant and how much of it is left, by secret hash. */
function tokenState(db: Db, hash: string) {
  return db.selectFrom('enroll_tokens').select(['tenant_id', 'expires_at', 'uses', 'max_uses']).where('secret_hash', '=', hash).executeTakeFirst();
}

/** Why a token cannot be used at `now`: unknown, expired or used up (one error each). */
function refusal(row: Awaited<ReturnType<typeof tokenState>>, now: Date): ServerError | undefined {
  if (!row) return new ServerError('ENROLL_TOKEN_INVALID', 'enrollment token: unknown');
  if (row.expires_at <= now) return new ServerError('ENROLL_TOKEN_EXPIRED', 'enrollment token: expired');
  if (row.uses >= row.max_uses) return new ServerError('ENROLL_TOKEN_EXHAUSTED', `enrollment token: all ${row.max_uses} uses spent`);
  return undefined;
}

function hashOf(secret: string): string {
  if (!plausibleSecret(secret)) throw new ServerError('ENROLL_TOKEN_INVALID', 'enrollment token: unknown');
  return hashSecret(secret);
}

/**
 * The tenant of a token that can still be used at `now`, without spending a use: enrollment
 * checks the token before it makes the tenant's CA and a certificate, and spends the use with
 * `consumeEnrollToken` in the unit of work that records the device.
 */
export async function usableEnrollToken(db: Db, secret: string, now: Date): Promise<{ tenantId: string }> {
  const row = await tokenState(db, hashOf(secret));
  const why = refusal(row, now);
  if (why) throw why;
  return { tenantId: row!.tenant_id };
}

/**
 * Spends `uses` uses (one per enrollment) of an enrollment token and returns its tenant.
 * Atomic: one conditional UPDATE (uses + n <= max_uses AND not expired), so concurrent
 * enrollments on any number of processes never exceed the limit; all n or none. On refusal,
 * a second read says why (unknown, expired or used up) for a clear error.
 */
export async function consumeEnrollToken(db: Db, secret: string, now: Date, uses = 1): Promise<{ tenantId: string; tokenId: string }> {
  const hash = hashOf(secret);
  const row = await db
    .updateTable('enroll_tokens')
    .set({ uses: sql`uses + ${uses}` })
    .where('secret_hash', '=', hash)
    .where('expires_at', '>', now)
    .where(sql<boolean>`uses + ${uses} <= max_uses`)
    .returning(['id', 'tenant_id'])
    .executeTakeFirst();
  if (row) return { tenantId: row.tenant_id, tokenId: row.id };
  // a concurrent enrollment may have changed the row since the UPDATE: still a refusal
  throw (
    refusal(await tokenState(db, hash), now) ??
    new ServerError('ENROLL_TOKEN_EXHAUSTED', uses === 1 ? 'enrollment token: all uses spent' : `enrollment token: fewer than ${uses} uses left`)
  );
}
