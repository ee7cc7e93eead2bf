/** The registries table: OCI registries by URL, credentials by reference only. Tenant-scoped. */
import { normalizeUuid } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { RegistriesTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';

export type RegistryRow = Selectable<RegistriesTable>;

/** Inserts the registry; a name already taken raises the database's unique violation. */
export async function insertRegistry(
  db: Db,
  tenantId: string,
  r: { name: string; url: string; credentials_ref: string | null },
  now: Date,
): Promise<RegistryRow> {
  return db
    .insertInto('registries')
    .values({ tenant_id: tenantId, ...r, created_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function getRegistry(db: Db, tenantId: string, id: string): Promise<RegistryRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  return db.selectFrom('registries').selectAll().where('tenant_id', '=', tenantId).where('id', '=', uuid).executeTakeFirst();
}

export async function listRegistries(db: Db, tenantId: string, limit: number, offset: number): Promise<RegistryRow[]> {
  return db.selectFrom('registries').selectAll().where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').limit(limit).offset(offset).execute();
}

/** spec §8: the tenant's registries, how many are reached over plain http, how many carry a credentials reference. */
export async function registryCounts(db: Db, tenantId: string): Promise<{ total: number; http: number; authenticated: number }> {
  const r = await db
    .selectFrom('registries')
    .select((eb) => [
      eb.fn.countAll<string>().as('total'),
      eb.fn
        .count<string>(
          eb
            .case()
            .when(sql<boolean>`url LIKE 'http:%'`)
            .then(1)
            .end(),
        )
        .as('http'),
      eb.fn.count<string>('credentials_ref').as('authenticated'),
    ])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  return { total: Number(r.total), http: Number(r.http), authenticated: Number(r.authenticated) };
}
