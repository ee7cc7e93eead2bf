/**
 * The reads of the vulnerability and readiness reports that no other resource has: aggregates
 * computed by the database over the whole tenant (or one product), never rows of every device.
 * Everything else the reports show comes from the owning resources' query functions.
 *
 * "Open" findings are those VEX has not closed (no statement, affected, under_investigation);
 * "active" devices are those not decommissioned. What a device runs is the fleet index
 * `vuln_device_software` (resulting digests of accepted receipts; legacy `installed` reports
 * where only those exist).
 */
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { Database } from '../../store/database.js';
import type { Db } from '../../store/tx.js';

const OPEN = sql<boolean>`(f.vex_status IS NULL OR f.vex_status IN ('affected', 'under_investigation'))`;

/** `f.artifact_id` restricted to the artifacts a product's releases name (nothing when no product). */
function inProduct(tenantId: string, product: string | undefined, column = sql.ref('f.artifact_id')): RawBuilder<unknown> {
  if (product === undefined) return sql``;
  return sql`AND ${column} IN (SELECT artifact_id FROM vuln_release_artifacts WHERE tenant_id = ${tenantId} AND product = ${product})`;
}

/** Active devices that run an artifact named by a release of the product (all active devices when no product). */
function productDevices(tenantId: string, product: string | undefined): RawBuilder<unknown> {
  if (product === undefined) return sql`SELECT d.name FROM devices d WHERE d.tenant_id = ${tenantId} AND d.status <> 'decommissioned'`;
  return sql`
    SELECT DISTINCT s.device_name AS name
    FROM vuln_device_software s
    JOIN devices d ON d.tenant_id = s.tenant_id AND d.name = s.device_name AND d.status <> 'decommissioned'
    JOIN artifacts a ON a.tenant_id = s.tenant_id AND a.digest = s.digest
    JOIN vuln_release_artifacts ra ON ra.tenant_id = a.tenant_id AND ra.artifact_id = a.id
    WHERE s.tenant_id = ${tenantId} AND ra.product = ${product}`;
}

const n = (v: unknown): number => Number(v ?? 0);
const date = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(v as string));

/**
 * Reads the rest of the transaction from one snapshot (PostgreSQL REPEATABLE READ), so every
 * figure of a report is as of the same instant. Must be the transaction's first statement.
 */
export async function readFromOneSnapshot(trx: Transaction<Database>): Promise<void> {
  await sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`.execute(trx);
}

// ---------------------------------------------------------------- vulnerability report

export interface FindingTally {
  severity: string;
  vex_status: string | null;
  known_exploited: boolean;
  n: number;
}

/** The tenant's (or product's) findings counted by severity, VEX status and known-exploited. */
export async function findingTally(db: Db, tenantId: string, product?: string): Promise<FindingTally[]> {
  const r = await sql<{ severity: string; vex_status: string | null; known_exploited: boolean; n: string }>`
    SELECT f.severity, f.vex_status, f.known_exploited, count(*) AS n
    FROM vuln_findings f
    WHERE f.tenant_id = ${tenantId} ${inProduct(tenantId, product)}
    GROUP BY f.severity, f.vex_status, f.known_exploited`.execute(db);
  return r.rows.map((x) => ({ ...x, n: n(x.n) }));
}

/** Artifacts with findings and with open findings (tenant or product). */
export async function artifactsWithFindings(db: Db, tenantId: string, product?: string): Promise<{ any: number; open: number }> {
  const r = await sql<{ any: string; open: string }>`
    SELECT count(DISTINCT f.artifact_id) AS any, count(DISTINCT f.artifact_id) FILTER (WHERE ${OPEN}) AS open
    FROM vuln_findings f
    WHERE f.tenant_id = ${tenantId} ${inProduct(tenantId, product)}`.execute(db);
  return { any: n(r.rows[0]?.any), open: n(r.rows[0]?.open) };
}

/**
 * Active devices running an artifact with an open finding, and with an open known-exploited
 * one (distinct devices; findings of the product's artifacts when a product is given).
 */
export async function exposedDeviceCounts(db: Db, tenantId: string, product?: string): Promise<{ devices: number; known_exploited: number }> {
  // from the (few) digests with open findings to the devices running them, through the digest index
  const r = await sql<{ devices: string; kev: string }>`
    WITH hit AS (
      SELECT a.digest, bool_or(f.known_exploited) AS kev
      FROM vuln_findings f JOIN artifacts a ON a.id = f.artifact_id
      WHERE f.tenant_id = ${tenantId} AND ${OPEN} ${inProduct(tenantId, product)}
      GROUP BY a.digest
    )
    SELECT count(DISTINCT s.device_name) AS devices, count(DISTINCT s.device_name) FILTER (WHERE hit.kev) AS kev
    FROM hit
    JOIN vuln_device_software s ON s.tenant_id = ${tenantId} AND s.digest = hit.digest
    JOIN devices d ON d.tenant_id = s.tenant_id AND d.name = s.device_name AND d.status <> 'decommissioned'`.execute(db);
  return { devices: n(r.rows[0]?.devices), known_exploited: n(r.rows[0]?.kev) };
}

export interface LatestRelease {
  product: string;
  release_id: string;
  version: string;
  created_at: Date;
  releases: number;
}

/** Per product (or the one product): its newest release and how many it has, by product name. */
export async function latestReleases(db: Db, tenantId: string, product?: string): Promise<LatestRelease[]> {
  const r = await sql<{ product: string; id: string; version: string; created_at: Date; releases: string }>`
    SELECT DISTINCT ON (product) product, id, version, created_at, count(*) OVER (PARTITION BY product) AS releases
    FROM releases
    WHERE tenant_id = ${tenantId} ${product === undefined ? sql`` : sql`AND product = ${product}`}
    ORDER BY product, created_at DESC, id DESC`.execute(db);
  return r.rows.map((x) => ({ product: x.product, release_id: x.id, version: x.version, created_at: new Date(x.created_at), releases: n(x.releases) }));
}

export interface ReportArtifactRow {
  id: string;
  name: string;
  version: string;
  kind: string;
  digest: string;
  has_sbom: boolean;
  /** Versions of the product's releases naming the artifact, oldest first (empty outside a product). */
  releases: string[];
}

/**
 * One page of the artifacts the product's releases name (by name, version), or with
 * `product` null of the artifacts no release names that have findings.
 */
export async function reportArtifactPage(db: Db, tenantId: string, product: string | null, limit: number, offset: number): Promise<ReportArtifactRow[]> {
  const sbom = sql<boolean>`EXISTS (SELECT 1 FROM artifact_sboms s WHERE s.artifact_id = a.id)`;
  const r =
    product === null
      ? await sql<ReportArtifactRow>`
          SELECT a.id, a.name, a.version, a.kind, a.digest, ${sbom} AS has_sbom, ARRAY[]::text[] AS releases
          FROM artifacts a
          WHERE a.tenant_id = ${tenantId}
            AND NOT EXISTS (SELECT 1 FROM vuln_release_artifacts ra WHERE ra.tenant_id = a.tenant_id AND ra.artifact_id = a.id)
            AND EXISTS (SELECT 1 FROM vuln_findings f WHERE f.artifact_id = a.id)
          ORDER BY a.name, a.version, a.id
          LIMIT ${limit} OFFSET ${offset}`.execute(db)
      : await sql<ReportArtifactRow>`
          SELECT a.id, a.name, a.version, a.kind, a.digest, ${sbom} AS has_sbom, array_agg(ra.version ORDER BY ra.created_at, ra.version) AS releases
          FROM vuln_release_artifacts ra JOIN artifacts a ON a.id = ra.artifact_id
          WHERE ra.tenant_id = ${tenantId} AND ra.product = ${product}
          GROUP BY a.id, a.name, a.version, a.kind, a.digest
          ORDER BY a.name, a.version, a.id
          LIMIT ${limit} OFFSET ${offset}`.execute(db);
  return r.rows.map((x) => ({ ...x, has_sbom: Boolean(x.has_sbom), releases: [...new Set(x.releases)] }));
}

export interface ArtifactFindingCounts {
  total: number;
  open: number;
  known_exploited: number;
  open_by_severity: Record<string, number>;
}

/** Per artifact: findings, open findings, known-exploited findings and open findings by severity. */
export async function artifactFindingCounts(db: Db, tenantId: string, artifactIds: readonly string[]): Promise<Map<string, ArtifactFindingCounts>> {
  const out = new Map<string, ArtifactFindingCounts>();
  if (artifactIds.length === 0) return out;
  const r = await sql<{ artifact_id: string; severity: string; total: string; open: string; kev: string }>`
    SELECT f.artifact_id, f.severity, count(*) AS total, count(*) FILTER (WHERE ${OPEN}) AS open, count(*) FILTER (WHERE f.known_exploited) AS kev
    FROM vuln_findings f
    WHERE f.tenant_id = ${tenantId} AND f.artifact_id IN (${sql.join(artifactIds)})
    GROUP BY f.artifact_id, f.severity`.execute(db);
  for (const x of r.rows) {
    const c = out.get(x.artifact_id) ?? { total: 0, open: 0, known_exploited: 0, open_by_severity: {} };
    c.total += n(x.total);
    c.open += n(x.open);
    c.known_exploited += n(x.kev);
    c.open_by_severity[x.severity] = (c.open_by_severity[x.severity] ?? 0) + n(x.open);
    out.set(x.artifact_id, c);
  }
  return out;
}

// ---------------------------------------------------------------- readiness report

export interface AdoptionRow {
  product: string;
  /** Active devices running an artifact named by any release of the product. */
  devices: number;
  /** Of those, devices running, for every component of the newest release, the artifact it names. */
  on_latest: number;
  /** Of those, devices whose whole current state is evidenced by accepted (device-signed) receipts. */
  with_receipt: number;
}

/** Release adoption per product (or the one product). */
export async function releaseAdoption(db: Db, tenantId: string, product?: string): Promise<Map<string, AdoptionRow>> {
  const r = await sql<{ product: string; devices: string; on_latest: string; with_receipt: string }>`
    WITH latest AS (
      SELECT DISTINCT ON (product) id, product FROM releases
      WHERE tenant_id = ${tenantId} ${product === undefined ? sql`` : sql`AND product = ${product}`}
      ORDER BY product, created_at DESC, id DESC
    ),
    parts AS (
      SELECT l.product, ra.component, a.digest
      FROM latest l JOIN vuln_release_artifacts ra ON ra.release_id = l.id JOIN artifacts a ON a.id = ra.artifact_id
    ),
    product_devices AS (
      SELECT DISTINCT ra.product, s.device_name
      FROM vuln_device_software s
      JOIN devices d ON d.tenant_id = s.tenant_id AND d.name = s.device_name AND d.status <> 'decommissioned'
      JOIN artifacts a ON a.tenant_id = s.tenant_id AND a.digest = s.digest
      JOIN vuln_release_artifacts ra ON ra.tenant_id = a.tenant_id AND ra.artifact_id = a.id
      WHERE s.tenant_id = ${tenantId} ${product === undefined ? sql`` : sql`AND ra.product = ${product}`}
    )
    SELECT pd.product,
      count(*) AS devices,
      count(*) FILTER (WHERE EXISTS (SELECT 1 FROM parts p WHERE p.product = pd.product)
        AND NOT EXISTS (
          SELECT 1 FROM parts p WHERE p.product = pd.product AND NOT EXISTS (
            SELECT 1 FROM vuln_device_software s WHERE s.tenant_id = ${tenantId} AND s.device_name = pd.device_name AND s.component = p.component AND s.digest = p.digest))) AS on_latest,
      count(*) FILTER (WHERE NOT EXISTS (
        SELECT 1 FROM vuln_device_software s WHERE s.tenant_id = ${tenantId} AND s.device_name = pd.device_name AND s.source <> 'receipt')) AS with_receipt
    FROM product_devices pd
    GROUP BY pd.product`.execute(db);
  return new Map(r.rows.map((x) => [x.product, { product: x.product, devices: n(x.devices), on_latest: n(x.on_latest), with_receipt: n(x.with_receipt) }]));
}

export interface DeviceEvidence {
  devices: number;
  /** Every component the device runs is evidenced by an accepted receipt. */
  receipt: number;
  /** At least one component is known only from legacy (device-reported) status. */
  legacy: number;
  /** Nothing recorded about what the device runs. */
  none: number;
  /** Devices of the `receipt` class by the label of their receipts (spec §2.3 rule 6: software-key). */
  labels: Record<string, number>;
}

/** How the current state of the active devices (of the product) is evidenced. */
export async function deviceEvidence(db: Db, tenantId: string, product?: string): Promise<DeviceEvidence> {
  const classes = await sql<{ devices: string; receipt: string; legacy: string; none: string }>`
    WITH scope AS (${productDevices(tenantId, product)}),
    ev AS (
      SELECT s.device_name, count(*) FILTER (WHERE s.source = 'legacy') AS legacy
      FROM vuln_device_software s WHERE s.tenant_id = ${tenantId} AND s.device_name IN (SELECT name FROM scope)
      GROUP BY s.device_name
    )
    SELECT count(*) AS devices,
      count(*) FILTER (WHERE ev.device_name IS NOT NULL AND ev.legacy = 0) AS receipt,
      count(*) FILTER (WHERE ev.legacy > 0) AS legacy,
      count(*) FILTER (WHERE ev.device_name IS NULL) AS none
    FROM scope LEFT JOIN ev ON ev.device_name = scope.name`.execute(db);
  const labels = await sql<{ label: string; n: string }>`
    WITH scope AS (${productDevices(tenantId, product)}),
    receipt_only AS (
      SELECT s.device_name FROM vuln_device_software s
      WHERE s.tenant_id = ${tenantId} AND s.device_name IN (SELECT name FROM scope)
      GROUP BY s.device_name HAVING bool_and(s.source = 'receipt')
    )
    SELECT r.label, count(DISTINCT s.device_name) AS n
    FROM vuln_device_software s JOIN release_receipts r ON r.id = s.source_id
    WHERE s.tenant_id = ${tenantId} AND s.device_name IN (SELECT device_name FROM receipt_only)
    GROUP BY r.label ORDER BY r.label`.execute(db);
  const c = classes.rows[0];
  return {
    devices: n(c?.devices),
    receipt: n(c?.receipt),
    legacy: n(c?.legacy),
    none: n(c?.none),
    labels: Object.fromEntries(labels.rows.map((x) => [x.label, n(x.n)])),
  };
}

export interface SbomCoverageRow {
  kind: string;
  artifacts: number;
  with_sbom: number;
  /** Artifacts named by a release. */
  released: number;
  released_with_sbom: number;
}

/** Artifacts with and without an SBOM, by kind (the product's artifacts when a product is given). */
export async function sbomCoverage(db: Db, tenantId: string, product?: string): Promise<SbomCoverageRow[]> {
  const r = await sql<{ kind: string; artifacts: string; with_sbom: string; released: string; released_with_sbom: string }>`
    SELECT a.kind, count(*) AS artifacts, count(s.artifact_id) AS with_sbom,
      count(*) FILTER (WHERE rel.named) AS released, count(s.artifact_id) FILTER (WHERE rel.named) AS released_with_sbom
    FROM artifacts a
    LEFT JOIN artifact_sboms s ON s.artifact_id = a.id
    CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM vuln_release_artifacts ra WHERE ra.tenant_id = a.tenant_id AND ra.artifact_id = a.id) AS named) rel
    WHERE a.tenant_id = ${tenantId} ${inProduct(tenantId, product, sql.ref('a.id'))}
    GROUP BY a.kind ORDER BY a.kind`.execute(db);
  return r.rows.map((x) => ({
    kind: x.kind,
    artifacts: n(x.artifacts),
    with_sbom: n(x.with_sbom),
    released: n(x.released),
    released_with_sbom: n(x.released_with_sbom),
  }));
}

/** Artifacts active devices run that have no SBOM (nothing is known of their components): the most-run first, and how many. */
export async function runningWithoutSbom(
  db: Db,
  tenantId: string,
  product: string | undefined,
  limit: number,
): Promise<{ total: number; rows: { id: string; name: string; version: string; devices: number }[] }> {
  // from the artifacts without an SBOM to the devices running them, through the digest index
  const run = sql`
    WITH bare AS (
      SELECT a.id, a.name, a.version, a.digest FROM artifacts a
      WHERE a.tenant_id = ${tenantId} AND NOT EXISTS (SELECT 1 FROM artifact_sboms b WHERE b.artifact_id = a.id) ${inProduct(tenantId, product, sql.ref('a.id'))}
    )
    SELECT bare.id, bare.name, bare.version, count(DISTINCT s.device_name) AS devices
    FROM bare
    JOIN vuln_device_software s ON s.tenant_id = ${tenantId} AND s.digest = bare.digest
    JOIN devices d ON d.tenant_id = s.tenant_id AND d.name = s.device_name AND d.status <> 'decommissioned'
    GROUP BY bare.id, bare.name, bare.version`;
  const total = await sql<{ n: string }>`SELECT count(*) AS n FROM (${run}) x`.execute(db);
  const rows = await sql<{
    id: string;
    name: string;
    version: string;
    devices: string;
  }>`SELECT * FROM (${run}) x ORDER BY devices DESC, name, version, id LIMIT ${limit}`.execute(db);
  return { total: n(total.rows[0]?.n), rows: rows.rows.map((x) => ({ ...x, devices: n(x.devices) })) };
}

/** Age buckets of open findings (days since first seen, at the cut-off): upper bounds, the last open-ended. */
export const AGE_BUCKETS = [
  { name: '0-7 days', maxDays: 7 },
  { name: '8-30 days', maxDays: 30 },
  { name: '31-90 days', maxDays: 90 },
  { name: 'over 90 days', maxDays: null },
] as const;

/** Open findings by severity and age bucket, and the oldest open finding's first-seen time. */
export async function openFindingAges(
  db: Db,
  tenantId: string,
  product: string | undefined,
  at: Date,
): Promise<{ rows: { severity: string; buckets: number[] }[]; oldest: Date | null }> {
  const day = (d: number) => new Date(at.getTime() - d * 86_400_000);
  const r = await sql<{ severity: string; b0: string; b1: string; b2: string; b3: string; oldest: Date | null }>`
    SELECT f.severity,
      count(*) FILTER (WHERE f.first_seen_at > ${day(7)}) AS b0,
      count(*) FILTER (WHERE f.first_seen_at <= ${day(7)} AND f.first_seen_at > ${day(30)}) AS b1,
      count(*) FILTER (WHERE f.first_seen_at <= ${day(30)} AND f.first_seen_at > ${day(90)}) AS b2,
      count(*) FILTER (WHERE f.first_seen_at <= ${day(90)}) AS b3,
      min(f.first_seen_at) AS oldest
    FROM vuln_findings f
    WHERE f.tenant_id = ${tenantId} AND ${OPEN} ${inProduct(tenantId, product)}
    GROUP BY f.severity`.execute(db);
  let oldest: Date | null = null;
  for (const x of r.rows) {
    const o = date(x.oldest);
    if (o !== null && (oldest === null || o < oldest)) oldest = o;
  }
  return { rows: r.rows.map((x) => ({ severity: x.severity, buckets: [n(x.b0), n(x.b1), n(x.b2), n(x.b3)] })), oldest };
}

export interface KeyHygiene {
  active: number;
  revoked: number;
  registered_last_year: number;
  revoked_last_year: number;
  oldest_active_at: Date | null;
  last_registered_at: Date | null;
  last_revoked_at: Date | null;
}

/** Authorizer-key hygiene at `at`: counts, rotations (revocations) in the last 365 days, ages. */
export async function authorizerKeyHygiene(db: Db, tenantId: string, at: Date): Promise<KeyHygiene> {
  const yearAgo = new Date(at.getTime() - 365 * 86_400_000);
  const r = await sql<{ active: string; revoked: string; reg: string; rev: string; oldest: Date | null; last_reg: Date | null; last_rev: Date | null }>`
    SELECT count(*) FILTER (WHERE revoked_at IS NULL) AS active, count(revoked_at) AS revoked,
      count(*) FILTER (WHERE created_at > ${yearAgo}) AS reg, count(*) FILTER (WHERE revoked_at > ${yearAgo}) AS rev,
      min(created_at) FILTER (WHERE revoked_at IS NULL) AS oldest, max(created_at) AS last_reg, max(revoked_at) AS last_rev
    FROM authorizer_keys WHERE tenant_id = ${tenantId}`.execute(db);
  const x = r.rows[0];
  return {
    active: n(x?.active),
    revoked: n(x?.revoked),
    registered_last_year: n(x?.reg),
    revoked_last_year: n(x?.rev),
    oldest_active_at: date(x?.oldest),
    last_registered_at: date(x?.last_reg),
    last_revoked_at: date(x?.last_rev),
  };
}

export interface TufRoleState {
  role: string;
  version: number;
  expires_at: Date;
}

/** The newest version and expiry of each role of the tenant's signing repository, and the newest root's signed bytes. */
export async function signingRepoState(db: Db, tenantId: string): Promise<{ roles: TufRoleState[]; root: Uint8Array | null }> {
  const roles = await sql<{ role: string; version: number; expires_at: Date }>`
    SELECT DISTINCT ON (role) role, version, expires_at FROM tuf_metadata
    WHERE tenant_id = ${tenantId} ORDER BY role, version DESC`.execute(db);
  const root = await db
    .selectFrom('tuf_metadata')
    .select('bytes')
    .where('tenant_id', '=', tenantId)
    .where('role', '=', 'root')
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
  return { roles: roles.rows.map((x) => ({ role: x.role, version: n(x.version), expires_at: new Date(x.expires_at) })), root: root?.bytes ?? null };
}

/** The CVSS vectors of these advisories (those that have one). */
export async function advisoryVectors(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('vuln_advisories')
    .select(['id', 'cvss_vector'])
    .where('id', 'in', [...new Set(ids)])
    .where('cvss_vector', 'is not', null)
    .execute();
  return new Map(rows.map((r) => [r.id, r.cvss_vector!]));
}

/** The figures a vulnerability report compares with its predecessor (recorded on its audit row). */
export interface ReportFigures {
  findings: number;
  open: number;
  known_exploited_open: number;
  exposed_devices: number;
  exposed_devices_known_exploited: number;
}

/**
 * The newest earlier generation of the vulnerability report of the same scope whose audit row
 * recorded its figures (reports generated before figures were recorded are skipped).
 */
export async function previousVulnerabilityReport(
  db: Db,
  tenantId: string,
  scope: { product?: string | undefined; severity?: string | undefined },
): Promise<{ generated_at: string; audit_seq: string; format: string; figures: ReportFigures } | null> {
  const row = await sql<{ seq: string; at: Date; detail: { format: string; data_cutoff: string; figures: ReportFigures } }>`
    SELECT seq, at, detail FROM audit_events
    WHERE tenant_id = ${tenantId} AND action = 'report.generate' AND target = 'report:vulnerability'
      AND detail ? 'figures'
      AND coalesce(detail->>'product', '') = ${scope.product ?? ''}
    ORDER BY seq DESC LIMIT 1`.execute(db);
  const r = row.rows[0];
  if (r === undefined) return null;
  return { generated_at: new Date(r.detail.data_cutoff).toISOString(), audit_seq: String(r.seq), format: r.detail.format, figures: r.detail.figures };
}

/** Whether a PDF report of the tenant carries the JSON twin with this digest (its `report.generate` audit row names it). */
export async function reportTwinRecorded(db: Db, tenantId: string, digest: string): Promise<boolean> {
  const row = await sql<{ seq: string }>`
    SELECT seq FROM audit_events
    WHERE tenant_id = ${tenantId} AND action = 'report.generate' AND detail->>'twin_sha256' = ${digest}
    LIMIT 1`.execute(db);
  return row.rows.length > 0;
}
