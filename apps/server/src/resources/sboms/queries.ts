/** The artifact_sboms table: one document per artifact, kept byte-exact. Tenant-scoped. */
import { normalizeUuid } from '@svc/release-core';
import type { Db } from '../../store/tx.js';

export interface SbomRecord {
  format: string;
  content_type: string;
  bytes: Uint8Array;
  digest: string;
  severities: string[];
}

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
  const r = await db.selectFrom('artifact_sboms').select(['content_type', 'bytes']).where('tenant_id', '=', tenantId).where('artifact_id', '=', uuid).executeTakeFirst();
  return r ? { contentType: r.content_type, bytes: r.bytes } : undefined;
}
