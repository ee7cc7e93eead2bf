/** The artifact_sboms table (one document per artifact, kept byte-exact) and its component index. Tenant-scoped. */
import { normalizeUuid } from '@svc/release-core';
import type { Insertable } from 'kysely';
import type { ArtifactSbomsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';
import type { SbomComponent } from './documents.js';

/** The stored document of one artifact (the artifact, tenant and clock come from the caller). */
export type SbomRecord = Omit<Insertable<ArtifactSbomsTable>, 'artifact_id' | 'tenant_id' | 'created_at'>;

/** An SBOM describes the artifact; attaching a newer one replaces the previous document. */
export async function upsertSbom(db: Db, tenantId: string, artifactId: string, sbom: SbomRecord, now: Date): Promise<void> {
  const values = { ...sbom, bytes: Buffer.from(sbom.bytes), created_at: now };
  await db
    .insertInto('artifact_sboms')
    .values({ artifact_id: artifactId, tenant_id: tenantId, ...values })
    .onConflict((oc) => oc.column('artifact_id').doUpdateSet(values))
    .execute();
}

export async function getSbom(db: Db, tenantId: string, artifactId: string): Promise<{ contentType: string; bytes: Uint8Array } | undefined> {
  const uuid = normalizeUuid(artifactId);
  if (uuid === undefined) return undefined;
  const r = await db
    .selectFrom('artifact_sboms')
    .select(['content_type', 'bytes'])
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', '=', uuid)
    .executeTakeFirst();
  return r ? { contentType: r.content_type, bytes: r.bytes } : undefined;
}

/** The artifact's component index becomes exactly `components`. */
export async function replaceComponents(db: Db, tenantId: string, artifactId: string, components: readonly SbomComponent[]): Promise<void> {
  await db.deleteFrom('sbom_components').where('artifact_id', '=', artifactId).execute();
  for (let i = 0; i < components.length; i += 1000) {
    await db
      .insertInto('sbom_components')
      .values(components.slice(i, i + 1000).map((c) => ({ tenant_id: tenantId, artifact_id: artifactId, ...c, hashes: JSON.stringify(c.hashes) })))
      .execute();
  }
}

export interface ComponentFilter {
  ecosystem?: string | undefined;
  /** exact package URL, or its prefix up to `@` (every version of a package) */
  purl?: string | undefined;
}

/** One page of an artifact's components (document order), the filtered total, and counts by ecosystem over the artifact. */
export async function listComponents(db: Db, tenantId: string, artifactId: string, f: ComponentFilter, limit: number, offset: number) {
  let q = db.selectFrom('sbom_components').where('tenant_id', '=', tenantId).where('artifact_id', '=', artifactId);
  if (f.ecosystem !== undefined) q = q.where('ecosystem', '=', f.ecosystem);
  if (f.purl !== undefined) {
    const p = f.purl;
    q = q.where((eb) => eb.or([eb('purl', '=', p), eb('purl', 'like', `${p.replace(/[\\%_]/g, (c) => `\\${c}`)}@%`)]));
  }
  const rows = await q.selectAll().orderBy('ordinal').limit(limit).offset(offset).execute();
  const total = await q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  const byEcosystem = await db
    .selectFrom('sbom_components')
    .select(['ecosystem', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', '=', artifactId)
    .groupBy('ecosystem')
    .execute();
  const counts: Record<string, number> = {};
  for (const r of byEcosystem) counts[r.ecosystem ?? 'other'] = Number(r.n);
  return { rows, total: Number(total.n), counts };
}
