import type { Insertable, Selectable } from 'kysely';
import type { ReleasesTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';

const COLUMNS = ['id', 'product', 'version', 'payload_digest', 'envelope_digest', 'keyid', 'target', 'created_at'] as const;

export type ReleaseRow = Omit<Selectable<ReleasesTable>, 'tenant_id' | 'envelope_bytes'>;

/** A release record before insertion (the tenant and clock come from the unit of work). */
export type NewRelease = Omit<Insertable<ReleasesTable>, 'id' | 'tenant_id' | 'created_at'>;

export async function releaseByVersion(db: Db, tenantId: string, product: string, version: string): Promise<ReleaseRow | undefined> {
  return db
    .selectFrom('releases')
    .select(COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('product', '=', product)
    .where('version', '=', version)
    .executeTakeFirst();
}

/** Inserts the record; undefined when (product, version) already exists (a concurrent submission won). */
export async function insertRelease(db: Db, tenantId: string, r: NewRelease, now: Date): Promise<ReleaseRow | undefined> {
  return db
    .insertInto('releases')
    .values({ tenant_id: tenantId, ...r, envelope_bytes: Buffer.from(r.envelope_bytes), created_at: now })
    .onConflict((oc) => oc.columns(['tenant_id', 'product', 'version']).doNothing())
    .returning(COLUMNS)
    .executeTakeFirst();
}

/** `id` must be a UUID (callers normalize it with normalizeUuid). */
export async function getReleaseRow(db: Db, tenantId: string, id: string): Promise<ReleaseRow | undefined> {
  return db.selectFrom('releases').select(COLUMNS).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** The record with its stored envelope bytes; `id` must be a UUID. */
export async function getReleaseWithEnvelope(db: Db, tenantId: string, id: string): Promise<(ReleaseRow & { envelope_bytes: Uint8Array }) | undefined> {
  return db
    .selectFrom('releases')
    .select([...COLUMNS, 'envelope_bytes'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The envelope bytes and digests of a release by id, in any tenant (the id came from a tenant-checked row). */
export async function releaseEvidence(db: Db, id: string): Promise<Pick<Selectable<ReleasesTable>, 'envelope_bytes' | 'payload_digest' | 'envelope_digest'>> {
  return db.selectFrom('releases').select(['envelope_bytes', 'payload_digest', 'envelope_digest']).where('id', '=', id).executeTakeFirstOrThrow();
}

export async function releasePage(
  db: Db,
  tenantId: string,
  filter: { product?: string | undefined },
  limit: number,
  offset: number,
): Promise<{ rows: ReleaseRow[]; total: number }> {
  let q = db.selectFrom('releases').where('tenant_id', '=', tenantId);
  if (filter.product !== undefined) q = q.where('product', '=', filter.product);
  const [rows, total] = await Promise.all([
    q.select(COLUMNS).orderBy('created_at', 'desc').orderBy('id').limit(limit).offset(offset).execute(),
    q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** spec §8 counts: the tenant's releases by product (the whole set, not the filtered one). */
export async function releaseCountsByProduct(db: Db, tenantId: string): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('releases')
    .select(['product', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('product')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.product, Number(r.n)]));
}

/** The artifacts a release's components name (ids already checked as UUIDs). */
export async function artifactsByIds(db: Db, tenantId: string, ids: string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('artifacts')
    .select(['id', 'name', 'version', 'digest', 'length', 'target', 'media_type', 'kind'])
    .where('tenant_id', '=', tenantId)
    .where('id', 'in', ids)
    .execute();
}

/** A group of the tenant with its stored snapshot digest; `lock` takes the row lock (rollout start). */
export async function targetGroup(
  db: Db,
  tenantId: string,
  groupId: string,
  opts: { lock?: boolean } = {},
): Promise<{ id: string; snapshot_digest: string } | undefined> {
  let q = db
    .selectFrom('device_groups')
    .select(['id', 'snapshot_digest'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', groupId)
    .where('deleted_at', 'is', null);
  if (opts.lock) q = q.forUpdate();
  return q.executeTakeFirst();
}
