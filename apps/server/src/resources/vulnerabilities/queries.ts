/**
 * Vulnerabilities (global records) and their exposure in a tenant's fleet, read from
 * indexes: findings by vulnerability key, what devices run by digest
 * (vuln_device_software, kept by the database from accepted receipts and legacy reports),
 * group membership by device, and the artifacts each release names (vuln_release_artifacts).
 * Decommissioned devices are not exposed.
 */
import { sql, type Selectable } from 'kysely';
import type { VulnAdvisoriesTable } from '../../store/vuln-tables.js';
import type { Db } from '../../store/tx.js';

export type AdvisoryRow = Selectable<VulnAdvisoriesTable>;

/** The vulnerability key an id or alias belongs to (a CVE not in any record keys itself). */
export async function resolveVulnKey(db: Db, id: string): Promise<string | undefined> {
  const r = await db.selectFrom('vuln_ids').select('vuln_key').where('id', '=', id).orderBy('vuln_key').executeTakeFirst();
  if (r) return r.vuln_key;
  const kev = await db.selectFrom('vuln_kev').select('cve_id').where('cve_id', '=', id).executeTakeFirst();
  return kev?.cve_id;
}

export async function advisoriesOf(db: Db, vulnKey: string): Promise<AdvisoryRow[]> {
  return db.selectFrom('vuln_advisories').selectAll().where('vuln_key', '=', vulnKey).orderBy('id').execute();
}

export async function kevEntry(db: Db, ids: readonly string[]) {
  if (ids.length === 0) return undefined;
  return db.selectFrom('vuln_kev').selectAll().where('cve_id', 'in', ids).where('removed_at', 'is', null).orderBy('date_added').executeTakeFirst();
}

export interface ExposedArtifact {
  artifact_id: string;
  name: string;
  version: string;
  digest: string;
  findings: number;
  open_findings: number;
  components: string[];
  fixed_versions: string[];
  vex_statuses: string[];
  devices: number;
}

const OPEN = sql<boolean>`(f.vex_status IS NULL OR f.vex_status IN ('affected', 'under_investigation'))`;

/** The artifacts with a finding of the vulnerability, with how many devices run each. */
export async function exposedArtifacts(db: Db, tenantId: string, vulnKey: string): Promise<ExposedArtifact[]> {
  const rows = await db
    .selectFrom('vuln_findings as f')
    .innerJoin('artifacts as a', 'a.id', 'f.artifact_id')
    .select([
      'a.id as artifact_id',
      'a.name',
      'a.version',
      'a.digest',
      (eb) => eb.fn.countAll<string>().as('findings'),
      sql<string>`count(*) FILTER (WHERE ${OPEN})`.as('open_findings'),
      sql<string[]>`array_agg(DISTINCT f.component_purl ORDER BY f.component_purl)`.as('components'),
      sql<string[]>`array(SELECT DISTINCT unnest(array_agg(f.fixed_versions)) ORDER BY 1)`.as('fixed_versions'),
      sql<string[]>`array_agg(DISTINCT coalesce(f.vex_status, 'none') ORDER BY coalesce(f.vex_status, 'none'))`.as('vex_statuses'),
    ])
    .where('f.tenant_id', '=', tenantId)
    .where('f.vuln_key', '=', vulnKey)
    .groupBy(['a.id', 'a.name', 'a.version', 'a.digest'])
    .orderBy('a.name')
    .orderBy('a.version')
    .execute();
  const digests = [...new Set(rows.map((r) => r.digest))];
  const counts = await deviceCountsByDigest(db, tenantId, digests);
  return rows.map((r) => ({
    artifact_id: r.artifact_id,
    name: r.name,
    version: r.version,
    digest: r.digest,
    findings: Number(r.findings),
    open_findings: Number(r.open_findings),
    components: r.components,
    fixed_versions: r.fixed_versions,
    vex_statuses: r.vex_statuses,
    devices: counts.get(r.digest) ?? 0,
  }));
}

/** No decommissioned device (an anti-join against the few decommissioned, not a join with every device). */
const notDecommissioned = (device: 's.device_name' | 'm.device_name', tenant: 's.tenant_id' | 'm.tenant_id') =>
  sql<boolean>`NOT EXISTS (SELECT 1 FROM devices d WHERE d.tenant_id = ${sql.ref(tenant)} AND d.name = ${sql.ref(device)} AND d.status = 'decommissioned')`;

export async function deviceCountsByDigest(db: Db, tenantId: string, digests: readonly string[]): Promise<Map<string, number>> {
  if (digests.length === 0) return new Map();
  // distinct devices per digest, hashed (count(DISTINCT) sorts)
  const pairs = exposedDevices(db, tenantId, digests).select(['s.digest', 's.device_name']).groupBy(['s.digest', 's.device_name']);
  const rows = await db
    .selectFrom(pairs.as('p'))
    .select(['p.digest', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('p.digest')
    .execute();
  return new Map(rows.map((r) => [r.digest, Number(r.n)]));
}

function exposedDevices(db: Db, tenantId: string, digests: readonly string[]) {
  return db
    .selectFrom('vuln_device_software as s')
    .where('s.tenant_id', '=', tenantId)
    .where('s.digest', 'in', digests)
    .where(notDecommissioned('s.device_name', 's.tenant_id'));
}

/**
 * Exposed devices (distinct), one page by name, and how many. The page walks the index in
 * name order and stops after `limit` devices; the count reads the digest index.
 */
export async function exposedDevicePage(
  db: Db,
  tenantId: string,
  digests: readonly string[],
  limit: number,
  offset: number,
): Promise<{ devices: { name: string; components: string[]; source: string }[]; total: number }> {
  if (digests.length === 0) return { devices: [], total: 0 };
  const names = exposedDevices(db, tenantId, digests).select('s.device_name').groupBy('s.device_name');
  const total = await db
    .selectFrom(names.as('x'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  const rows = await exposedDevices(db, tenantId, digests)
    .select(['s.device_name', sql<string[]>`array_agg(s.component ORDER BY s.component)`.as('components'), sql<string>`min(s.source)`.as('source')])
    .groupBy(['s.tenant_id', 's.device_name'])
    .orderBy('s.tenant_id')
    .orderBy('s.device_name')
    .limit(limit)
    .offset(offset)
    .execute();
  return { devices: rows.map((r) => ({ name: r.device_name, components: r.components, source: r.source })), total: Number(total.n) };
}

/** Groups with exposed members, with how many (a member is one row per group: no distinct needed). */
export async function exposedGroups(db: Db, tenantId: string, digests: readonly string[]): Promise<{ id: string; name: string; devices: number }[]> {
  if (digests.length === 0) return [];
  const rows = await db
    .selectFrom('device_group_members as m')
    .innerJoin('device_groups as g', 'g.id', 'm.group_id')
    .select(['g.id', 'g.name', (eb) => eb.fn.countAll<string>().as('n')])
    .where('m.tenant_id', '=', tenantId)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('vuln_device_software as s')
          .select(sql<number>`1`.as('one'))
          .whereRef('s.tenant_id', '=', 'm.tenant_id')
          .whereRef('s.device_name', '=', 'm.device_name')
          .where('s.digest', 'in', digests),
      ),
    )
    .where(notDecommissioned('m.device_name', 'm.tenant_id'))
    .groupBy(['g.id', 'g.name'])
    .orderBy('g.name')
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.name, devices: Number(r.n) }));
}

export interface ReleaseRef {
  release_id: string;
  product: string;
  version: string;
  created_at: Date;
}

/** Releases naming any of the artifacts. */
export async function releasesWithArtifacts(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<(ReleaseRef & { artifacts: string[] })[]> {
  if (artifactIds.length === 0) return [];
  const rows = await db
    .selectFrom('vuln_release_artifacts')
    .select(['release_id', 'product', 'version', 'created_at', sql<string[]>`array_agg(artifact_id::text ORDER BY artifact_id)`.as('artifacts')])
    .where('tenant_id', '=', tenantId)
    .where('artifact_id', 'in', artifactIds)
    .groupBy(['release_id', 'product', 'version', 'created_at'])
    .orderBy('product')
    .orderBy('created_at', 'desc')
    .execute();
  return rows;
}

/**
 * Releases of the products that fix the vulnerability: every artifact they name has an SBOM
 * and none has an open finding of it. Newest first per product.
 */
export async function fixingReleases(db: Db, tenantId: string, products: readonly string[], vulnKey: string): Promise<ReleaseRef[]> {
  if (products.length === 0) return [];
  const r = await sql<ReleaseRef>`
    SELECT DISTINCT r.release_id, r.product, r.version, r.created_at
    FROM vuln_release_artifacts r
    WHERE r.tenant_id = ${tenantId} AND r.product IN (${sql.join(products)})
      AND NOT EXISTS (
        SELECT 1 FROM vuln_release_artifacts ra JOIN vuln_findings f ON f.artifact_id = ra.artifact_id
        WHERE ra.release_id = r.release_id AND f.vuln_key = ${vulnKey} AND ${OPEN})
      AND NOT EXISTS (
        SELECT 1 FROM vuln_release_artifacts ra LEFT JOIN artifact_sboms s ON s.artifact_id = ra.artifact_id
        WHERE ra.release_id = r.release_id AND s.artifact_id IS NULL)
    ORDER BY r.product, r.created_at DESC`.execute(db);
  return r.rows;
}
