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
import { fixOrdering, orderVersions } from './osv-ranges.js';

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
}

interface FindingFixes {
  ecosystem: string | null;
  fixed: string[];
}

/**
 * The union of an artifact's findings' fixes: each ecosystem's in its order (one ecosystem,
 * almost always: the findings of one vulnerability in one artifact are usually one package),
 * the ecosystems in the order of their first component.
 */
function mergeFixes(fixes: readonly FindingFixes[]): string[] {
  const byEcosystem = new Map<string | null, string[]>();
  for (const x of fixes) byEcosystem.set(x.ecosystem, [...(byEcosystem.get(x.ecosystem) ?? []), ...x.fixed]);
  return [...new Set([...byEcosystem].flatMap(([eco, versions]) => orderVersions(versions, fixOrdering(eco))))];
}

const OPEN = sql<boolean>`(f.vex_status IS NULL OR f.vex_status IN ('affected', 'under_investigation'))`;

/** The artifacts with a finding of the vulnerability (how many devices run each: `deviceCountsByDigest`). */
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
      // per artifact its findings' fixed-in versions with their ecosystems, merged below in each ecosystem's order
      // (an aggregate of arrays would need them all non-empty and of one length)
      sql<FindingFixes[]>`coalesce((SELECT jsonb_agg(jsonb_build_object('ecosystem', f2.ecosystem, 'fixed', f2.fixed_versions) ORDER BY f2.component_purl)
        FROM vuln_findings f2 WHERE f2.artifact_id = a.id AND f2.tenant_id = ${tenantId} AND f2.vuln_key = ${vulnKey}), '[]'::jsonb)`.as('fixes'),
      sql<string[]>`array_agg(DISTINCT coalesce(f.vex_status, 'none') ORDER BY coalesce(f.vex_status, 'none'))`.as('vex_statuses'),
    ])
    .where('f.tenant_id', '=', tenantId)
    .where('f.vuln_key', '=', vulnKey)
    .groupBy(['a.id', 'a.name', 'a.version', 'a.digest'])
    .orderBy('a.name')
    .orderBy('a.version')
    .execute();
  return rows.map((r) => ({
    artifact_id: r.artifact_id,
    name: r.name,
    version: r.version,
    digest: r.digest,
    findings: Number(r.findings),
    open_findings: Number(r.open_findings),
    components: r.components,
    fixed_versions: mergeFixes(r.fixes),
    vex_statuses: r.vex_statuses,
  }));
}

/** No decommissioned device (an anti-join against the few decommissioned, not a join with every device). */
const notDecommissioned = (device: 's.device_name' | 'm.device_name', tenant: 's.tenant_id' | 'm.tenant_id') =>
  sql<boolean>`NOT EXISTS (SELECT 1 FROM devices d WHERE d.tenant_id = ${sql.ref(tenant)} AND d.name = ${sql.ref(device)} AND d.status = 'decommissioned')`;

/** `s.digest = ANY($1)`: one array parameter however many digests (an `in` list binds one each). */
const digestIn = (digests: readonly string[]) => sql<boolean>`s.digest = ANY(${digests}::text[])`;

/**
 * Distinct devices per digest: the digest index read in (digest, device) order, duplicates
 * (one device running a digest in two components) dropped as they stream past, counted per
 * digest; nothing is hashed or sorted.
 */
export async function deviceCountsByDigest(db: Db, tenantId: string, digests: readonly string[]): Promise<Map<string, number>> {
  if (digests.length === 0) return new Map();
  const r = await sql<{ digest: string; n: string }>`
    SELECT x.digest, count(*) AS n FROM (
      SELECT DISTINCT ON (s.digest, s.device_name) s.digest FROM vuln_device_software s
      WHERE s.tenant_id = ${tenantId} AND ${digestIn(digests)} AND ${notDecommissioned('s.device_name', 's.tenant_id')}
      ORDER BY s.digest, s.device_name) x
    GROUP BY x.digest`.execute(db);
  return new Map(r.rows.map((x) => [x.digest, Number(x.n)]));
}

function exposedDevices(db: Db, tenantId: string, digests: readonly string[]) {
  return db
    .selectFrom('vuln_device_software as s')
    .where('s.tenant_id', '=', tenantId)
    .where(digestIn(digests))
    .where(notDecommissioned('s.device_name', 's.tenant_id'));
}

/** Exposed devices (distinct), one page by name: the page walks the primary key in name order and stops after `limit` devices. */
export async function exposedDevicePage(
  db: Db,
  tenantId: string,
  digests: readonly string[],
  limit: number,
  offset: number,
): Promise<{ name: string; components: string[]; source: string }[]> {
  if (digests.length === 0) return [];
  const rows = await exposedDevices(db, tenantId, digests)
    .select(['s.device_name', sql<string[]>`array_agg(s.component ORDER BY s.component)`.as('components'), sql<string>`min(s.source)`.as('source')])
    .groupBy(['s.tenant_id', 's.device_name'])
    .orderBy('s.tenant_id')
    .orderBy('s.device_name')
    .limit(limit)
    .offset(offset)
    .execute();
  return rows.map((r) => ({ name: r.device_name, components: r.components, source: r.source }));
}

/**
 * How many distinct devices run any of the digests, and per group how many of its members
 * do: the set of exposed devices is read once (one pass over the digest index) and both
 * counts come from it.
 */
export async function exposedDeviceTally(
  db: Db,
  tenantId: string,
  digests: readonly string[],
): Promise<{ total: number; groups: { id: string; name: string; devices: number }[] }> {
  if (digests.length === 0) return { total: 0, groups: [] };
  const r = await sql<{ id: string | null; name: string | null; n: string }>`
    WITH e AS MATERIALIZED (
      SELECT DISTINCT s.device_name FROM vuln_device_software s
      WHERE s.tenant_id = ${tenantId} AND ${digestIn(digests)} AND ${notDecommissioned('s.device_name', 's.tenant_id')})
    SELECT * FROM (
      SELECT NULL::uuid AS id, NULL::text AS name, count(*) AS n FROM e
      UNION ALL
      SELECT g.id, g.name, count(*) AS n FROM e
        JOIN device_group_members m ON m.tenant_id = ${tenantId} AND m.device_name = e.device_name
        JOIN device_groups g ON g.id = m.group_id
      GROUP BY g.id, g.name) x
    ORDER BY x.name NULLS FIRST`.execute(db);
  const total = Number(r.rows.find((x) => x.id === null)?.n ?? 0);
  const groups = r.rows
    .filter((x): x is { id: string; name: string; n: string } => x.id !== null && x.name !== null)
    .map((x) => ({ id: x.id, name: x.name, devices: Number(x.n) }));
  return { total, groups };
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
 * Per vulnerability of `vulnKeys`, the newest release of `product` that fixes it (the rule of
 * `fixingReleases`), in one query: a report's page of findings asks once, not once per finding.
 */
export async function newestFixingReleases(
  db: Db,
  tenantId: string,
  product: string,
  vulnKeys: readonly string[],
): Promise<Map<string, { product: string; version: string }>> {
  if (vulnKeys.length === 0) return new Map();
  const r = await sql<{ vuln_key: string; product: string; version: string }>`
    SELECT DISTINCT ON (k.vuln_key) k.vuln_key, r.product, r.version
    FROM unnest(${[...new Set(vulnKeys)]}::text[]) AS k(vuln_key)
    JOIN vuln_release_artifacts r ON r.tenant_id = ${tenantId} AND r.product = ${product}
    WHERE NOT EXISTS (
        SELECT 1 FROM vuln_release_artifacts ra JOIN vuln_findings f ON f.artifact_id = ra.artifact_id
        WHERE ra.release_id = r.release_id AND f.vuln_key = k.vuln_key AND ${OPEN})
      AND NOT EXISTS (
        SELECT 1 FROM vuln_release_artifacts ra LEFT JOIN artifact_sboms s ON s.artifact_id = ra.artifact_id
        WHERE ra.release_id = r.release_id AND s.artifact_id IS NULL)
    ORDER BY k.vuln_key, r.created_at DESC, r.version DESC`.execute(db);
  return new Map(r.rows.map((x) => [x.vuln_key, { product: x.product, version: x.version }]));
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
