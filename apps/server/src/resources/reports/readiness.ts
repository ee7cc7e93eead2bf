/**
 * The readiness report, the fleet's evidence posture: release adoption per product (devices on
 * the newest release), how each device's current state is evidenced (device-signed receipts,
 * labelled software-key, or legacy device-reported status), artifacts with and without an
 * SBOM, open findings by severity and age, key hygiene (authorizer keys and their rotations,
 * the signing repository's root version, threshold, expiry and custody), and the open
 * Article 14 cases with their deadlines. Every figure is an aggregate computed by the database.
 */
import type { SigningRepository } from '../../signing-repo/index.js';
import type { Db } from '../../store/tx.js';
import { listAuthorizerKeys } from '../authorizer-keys/queries.js';
import { ACTIVE_STATES, CASE_STATES, caseDeadlines, type CaseState } from '../cases/deadlines.js';
import { deadlineFacts, listCases } from '../cases/queries.js';
import { deadlineView } from '../cases/views.js';
import { deviceCounts, type DeviceCounts } from '../devices/queries/list.js';
import { SEVERITIES, type Severity } from '../vulnerabilities/severity.js';
import { notFound } from '../../errors/server-error.js';
import { paged, type ReportHeader, type ReportScope } from './document.js';
import {
  AGE_BUCKETS,
  authorizerKeyHygiene,
  deviceEvidence,
  latestReleases,
  openFindingAges,
  releaseAdoption,
  runningWithoutSbom,
  sbomCoverage,
  signingRepoState,
  type DeviceEvidence,
  type SbomCoverageRow,
} from './queries.js';

/** How many artifacts devices run without an SBOM the report names (the total is always given). */
export const RUNNING_WITHOUT_SBOM_LISTED = 50;

export interface AdoptionSection {
  product: string;
  latest_release: { id: string; version: string; created_at: string };
  releases: number;
  /** Active devices running an artifact named by a release of the product. */
  devices: number;
  /** Devices running, for every component of the newest release, the artifact it names. */
  on_latest: number;
  /** Devices whose whole current state is evidenced by accepted device-signed receipts. */
  with_receipt: number;
}

export interface CaseSection {
  id: string;
  kind: string;
  state: string;
  title: string;
  owner: string;
  products: string[];
  aware_at: string;
  deadlines: ReturnType<typeof deadlineView>[];
}

export interface ReadinessReport {
  report: ReportHeader;
  /** The tenant's devices by status (the whole fleet, whatever the scope). */
  fleet: DeviceCounts;
  /** How the current state of the active devices in scope is evidenced. */
  evidence: DeviceEvidence;
  products: AdoptionSection[];
  sboms: {
    artifacts: number;
    with_sbom: number;
    without_sbom: number;
    released: { artifacts: number; with_sbom: number };
    by_kind: SbomCoverageRow[];
    running_without_sbom: { total: number; artifacts: { id: string; name: string; version: string; devices: number }[] };
  };
  findings: {
    open: number;
    age_buckets: string[];
    /** Open findings per severity, one count per age bucket (days since first seen at the cut-off). */
    by_severity: Record<Severity, number[]>;
    oldest_open_first_seen_at: string | null;
  };
  keys: {
    authorizer: {
      active: number;
      revoked: number;
      registered_last_365_days: number;
      /** Revocations in the last 365 days: each a rotation away from a key. */
      revoked_last_365_days: number;
      oldest_active_registered_at: string | null;
      last_registered_at: string | null;
      last_revoked_at: string | null;
      keys: AsyncIterable<{ name: string; keyid: string; registered_at: string; revoked_at: string | null; age_days: number }>;
    };
    signing_repository: {
      roles: { role: string; version: number; expires_at: string; days_left: number }[];
      root: { version: number; rotations: number; threshold: number | null; keys: number | null; key_on_server: boolean | null } | null;
    };
  };
  cases: { counts: Record<CaseState, number>; active: AsyncIterable<CaseSection> };
}

const DAY_MS = 86_400_000;
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/**
 * Whether the tenant's root private key is on the server (null: no signing repository
 * configured). Offline custody (exported, then deleted) is the stronger posture.
 */
export async function rootKeyOnServer(repo: SigningRepository | undefined, tenantId: string): Promise<boolean | null> {
  if (repo === undefined) return null;
  return repo.keys.has(tenantId, 'root');
}

/** The root role of the newest root metadata: its threshold and key count (null when unreadable). */
function rootRole(bytes: Uint8Array): { threshold: number | null; keys: number | null } {
  try {
    const role = (JSON.parse(Buffer.from(bytes).toString('utf8')) as { signed?: { roles?: { root?: { threshold?: unknown; keyids?: unknown } } } }).signed
      ?.roles?.root;
    return { threshold: typeof role?.threshold === 'number' ? role.threshold : null, keys: Array.isArray(role?.keyids) ? role.keyids.length : null };
  } catch {
    return { threshold: null, keys: null };
  }
}

async function* activeCases(db: Db, tenantId: string, product: string | undefined, now: Date): AsyncGenerator<CaseSection> {
  for (const state of ACTIVE_STATES) {
    const cases = paged(async (limit, offset) => (await listCases(db, tenantId, { state, product }, now, limit, offset)).rows);
    for await (const c of cases) {
      const deadlines = caseDeadlines(await deadlineFacts(db, tenantId, c), now);
      yield {
        id: c.id,
        kind: c.kind,
        state: c.state,
        title: c.title,
        owner: c.owner,
        products: c.products,
        aware_at: new Date(c.aware_at).toISOString(),
        deadlines: deadlines.map(deadlineView),
      };
    }
  }
}

/** The report over `db` (one snapshot) at `now`; a product no release names is a 404. */
export async function readinessReport(
  db: Db,
  tenantId: string,
  header: ReportHeader,
  scope: ReportScope,
  now: Date,
  keyOnServer: boolean | null,
): Promise<ReadinessReport> {
  const { product } = scope;
  const latest = await latestReleases(db, tenantId, product);
  if (product !== undefined && latest.length === 0) throw notFound(`product ${product} (no release of it)`);
  const adoption = await releaseAdoption(db, tenantId, product);
  const fleet = await deviceCounts(db, tenantId);
  const evidence = await deviceEvidence(db, tenantId, product);

  const byKind = await sbomCoverage(db, tenantId, product);
  const sum = (f: (r: SbomCoverageRow) => number) => byKind.reduce((a, r) => a + f(r), 0);
  const unsbom = await runningWithoutSbom(db, tenantId, product, RUNNING_WITHOUT_SBOM_LISTED);

  const ages = await openFindingAges(db, tenantId, product, now);
  const bySeverity = Object.fromEntries(SEVERITIES.map((s) => [s, AGE_BUCKETS.map(() => 0)])) as Record<Severity, number[]>;
  for (const r of ages.rows) if (r.severity in bySeverity) bySeverity[r.severity as Severity] = r.buckets;

  const hygiene = await authorizerKeyHygiene(db, tenantId, now);
  const repo = await signingRepoState(db, tenantId);
  const root = repo.roles.find((r) => r.role === 'root');

  const counts = Object.fromEntries(CASE_STATES.map((s) => [s, 0])) as Record<CaseState, number>;
  for (const s of CASE_STATES) counts[s] = (await listCases(db, tenantId, { state: s, product }, now, 0, 0)).total;

  return {
    report: header,
    fleet,
    evidence,
    products: latest.map((l) => {
      const a = adoption.get(l.product);
      return {
        product: l.product,
        latest_release: { id: l.release_id, version: l.version, created_at: l.created_at.toISOString() },
        releases: l.releases,
        devices: a?.devices ?? 0,
        on_latest: a?.on_latest ?? 0,
        with_receipt: a?.with_receipt ?? 0,
      };
    }),
    sboms: {
      artifacts: sum((r) => r.artifacts),
      with_sbom: sum((r) => r.with_sbom),
      without_sbom: sum((r) => r.artifacts - r.with_sbom),
      released: { artifacts: sum((r) => r.released), with_sbom: sum((r) => r.released_with_sbom) },
      by_kind: byKind,
      running_without_sbom: { total: unsbom.total, artifacts: unsbom.rows },
    },
    findings: {
      open: ages.rows.reduce((a, r) => a + r.buckets.reduce((x, y) => x + y, 0), 0),
      age_buckets: AGE_BUCKETS.map((b) => b.name),
      by_severity: bySeverity,
      oldest_open_first_seen_at: iso(ages.oldest),
    },
    keys: {
      authorizer: {
        active: hygiene.active,
        revoked: hygiene.revoked,
        registered_last_365_days: hygiene.registered_last_year,
        revoked_last_365_days: hygiene.revoked_last_year,
        oldest_active_registered_at: iso(hygiene.oldest_active_at),
        last_registered_at: iso(hygiene.last_registered_at),
        last_revoked_at: iso(hygiene.last_revoked_at),
        keys: paged(async (limit, offset) =>
          (await listAuthorizerKeys(db, tenantId, limit, offset)).map((k) => ({
            name: k.name,
            keyid: k.keyid,
            registered_at: new Date(k.created_at).toISOString(),
            revoked_at: iso(k.revoked_at === null ? null : new Date(k.revoked_at)),
            age_days: Math.floor((now.getTime() - new Date(k.created_at).getTime()) / DAY_MS),
          })),
        ),
      },
      signing_repository: {
        roles: repo.roles.map((r) => ({
          role: r.role,
          version: r.version,
          expires_at: r.expires_at.toISOString(),
          days_left: Math.floor((r.expires_at.getTime() - now.getTime()) / DAY_MS),
        })),
        root:
          root === undefined
            ? null
            : {
                version: root.version,
                rotations: root.version - 1,
                ...(repo.root === null ? { threshold: null, keys: null } : rootRole(repo.root)),
                key_on_server: keyOnServer,
              },
      },
    },
    cases: { counts, active: activeCases(db, tenantId, product, now) },
  };
}
