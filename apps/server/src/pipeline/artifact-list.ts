/**
 * Artifact listing (spec 8 shape: `artifacts`, `total`, `limit`, `offset`, `counts` by kind)
 * with the kind and vulnerability-severity filters (spec 4), and the PATCH of mutable fields.
 */
import { sql } from 'kysely';
import { artifactView, getArtifact, ARTIFACT_KINDS, type ArtifactView } from './artifacts.js';
import { type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import { SEVERITIES } from './sbom.js';
import { ServerError } from '../errors/server-error.js';

export interface ArtifactFilter {
  kind?: string;
  severity?: string;
  q?: string;
}

export async function listArtifacts(
  db: Db,
  tenantId: string,
  filter: ArtifactFilter,
  limit: number,
  offset: number,
): Promise<{ artifacts: ArtifactView[]; total: number; limit: number; offset: number; counts: Record<string, number> }> {
  if (filter.kind !== undefined && !(ARTIFACT_KINDS as readonly string[]).includes(filter.kind)) {
    throw new ServerError('ARTIFACT_INVALID', `kind: must be one of ${ARTIFACT_KINDS.join(', ')}`);
  }
  if (filter.severity !== undefined && !(SEVERITIES as readonly string[]).includes(filter.severity)) {
    throw new ServerError('ARTIFACT_INVALID', `severity: must be one of ${SEVERITIES.join(', ')}`);
  }
  let q = db.selectFrom('artifacts as a').leftJoin('artifact_sboms as s', 's.artifact_id', 'a.id').where('a.tenant_id', '=', tenantId);
  if (filter.kind !== undefined) q = q.where('a.kind', '=', filter.kind);
  // a vulnerability of that severity in the attached SBOM (CycloneDX vulnerabilities[].ratings[].severity)
  if (filter.severity !== undefined) q = q.where(sql<boolean>`${filter.severity} = ANY(s.severities)`);
  if (filter.q !== undefined && filter.q !== '') {
    // LIKE meta-characters in q are literal
    const pattern = `%${filter.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    q = q.where((eb) => eb.or([eb('a.name', 'like', pattern), eb('a.version', 'like', pattern)]));
  }
  const rows = await q
    .selectAll('a')
    .select((eb) => eb('s.artifact_id', 'is not', null).as('has_sbom'))
    .orderBy('a.created_at', 'desc')
    .orderBy('a.id')
    .limit(limit)
    .offset(offset)
    .execute();
  const total = await q.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  // counts break down the tenant's whole set by kind (spec 8), independent of the filter
  const byKind = await db
    .selectFrom('artifacts')
    .select(['kind', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('kind')
    .execute();
  const counts: Record<string, number> = {};
  for (const k of ARTIFACT_KINDS) counts[k] = 0;
  for (const r of byKind) counts[r.kind] = Number(r.n);
  return { artifacts: rows.map(artifactView), total: Number(total.n), limit, offset, counts };
}

const MUTABLE = new Set(['description', 'labels']);
const IMMUTABLE = new Set(['name', 'version', 'digest', 'length', 'kind', 'target', 'media_type', 'id', 'filename']);

/** PATCH: description and labels only; identity fields are immutable (spec 3.6 spirit: signed bytes never change). */
export async function patchArtifact(db: Db, tenantId: string, id: string, body: Record<string, unknown>, now: Date): Promise<ArtifactView> {
  for (const k of Object.keys(body)) {
    if (IMMUTABLE.has(k)) throw new ServerError('ARTIFACT_IMMUTABLE', `${k}: is immutable once published`);
    if (!MUTABLE.has(k)) throw new ServerError('ARTIFACT_INVALID', `${k}: unknown field`);
  }
  const set: { description?: string | null; labels?: string; updated_at: Date } = { updated_at: now };
  if ('description' in body) {
    const d = body['description'];
    if (d !== null && (typeof d !== 'string' || d.length > 4096)) throw new ServerError('ARTIFACT_INVALID', 'description: must be a string of at most 4096 characters or null');
    set.description = d as string | null;
  }
  if ('labels' in body) {
    const l = body['labels'];
    if (typeof l !== 'object' || l === null || Array.isArray(l)) throw new ServerError('ARTIFACT_INVALID', 'labels: must be an object of string values');
    const entries = Object.entries(l as Record<string, unknown>);
    if (entries.length > 64) throw new ServerError('ARTIFACT_INVALID', 'labels: at most 64 labels');
    for (const [k, v] of entries) {
      if (!/^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/.test(k)) throw new ServerError('ARTIFACT_INVALID', `labels.${k}: label keys must match ^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$`);
      if (typeof v !== 'string' || v.length > 256) throw new ServerError('ARTIFACT_INVALID', `labels.${k}: must be a string of at most 256 characters`);
    }
    set.labels = JSON.stringify(l);
  }
  if (!isUuid(id)) throw new ServerError('NOT_FOUND', `artifact ${id} not found`);
  const r = await db.updateTable('artifacts').set(set).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw new ServerError('NOT_FOUND', `artifact ${id} not found`);
  return (await getArtifact(db, tenantId, id))!;
}
