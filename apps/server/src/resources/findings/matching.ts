/**
 * Findings from an inventory and the advisories that name its packages: each component
 * (package key, version, distribution release) against each affected entry of the same
 * key (vulnerabilities/osv-ranges.ts), one finding per artifact, vulnerability (aliases
 * merged) and component, recording every advisory and rule that matched. Severity is the
 * highest of the matching records; KEV membership of any of the vulnerability's ids marks it
 * known exploited; the latest applicable VEX statement sets its status. Pure.
 */
import type { Selectable } from 'kysely';
import type { VulnFindingsTable } from '../../store/vuln-tables.js';
import type { SbomComponent } from '../sboms/documents.js';
import type { StoredAffected } from '../vuln-feeds/osv.js';
import {
  fixedVersions,
  fixOrdering,
  matchAffected,
  orderVersions,
  type AffectedEntry,
  type MatchHow,
  type MatchResult,
} from '../vulnerabilities/osv-ranges.js';
import { maxSeverity, SEVERITY_RANK, type Severity } from '../vulnerabilities/severity.js';

/** A component of the index, with the artifact it belongs to. */
export type InventoryComponent = Pick<SbomComponent, 'purl' | 'package_key' | 'ecosystem' | 'release' | 'name' | 'version'> & { artifact_id: string };

export interface CandidateAdvisory {
  id: string;
  vuln_key: string;
  aliases: string[];
  summary: string | null;
  severity: string;
  severity_source: string;
  cvss_score: number | null;
  affected: StoredAffected[];
}

export interface VexStatement {
  id: string;
  artifact_id: string;
  vuln_id: string;
  component_purl: string | null;
  status: string;
  justification: string | null;
  statement_at: Date;
  recorded_at: Date;
}

export type MatchRecord = MatchHow & { advisory: string; ecosystem: string; release: string | null };

/** A finding as matching makes it: the row of `vuln_findings` without what the database and the clock add. */
export type FindingDraft = Omit<
  Selectable<VulnFindingsTable>,
  'id' | 'tenant_id' | 'exploited_signal_at' | 'first_seen_at' | 'updated_at' | 'severity' | 'matched_by'
> & { severity: Severity; matched_by: MatchRecord[] };

export interface MatchStats {
  components: number;
  /** components without a version: nothing can be decided for them */
  unversioned: number;
  /** (component, entry) pairs whose ranges use an ordering the server does not have */
  unsupported: number;
}

/**
 * Results per affected entry and version: an entry's ranges are parsed and walked once per
 * distinct version (artifacts share component versions; the entries live as long as the
 * run's advisory cache holds their record). Results are never mutated. Bounded per entry.
 */
const matched = new WeakMap<AffectedEntry, Map<string, MatchResult>>();
const MATCHED_PER_ENTRY = 1000;

function matchCached(version: string, entry: AffectedEntry): MatchResult {
  let byVersion = matched.get(entry);
  if (!byVersion) matched.set(entry, (byVersion = new Map<string, MatchResult>()));
  let r = byVersion.get(version);
  if (r === undefined) {
    r = matchAffected(version, entry);
    if (byVersion.size >= MATCHED_PER_ENTRY) byVersion.clear();
    byVersion.set(version, r);
  }
  return r;
}

const releaseFits = (entry: string | null, component: string | null) => entry === null || component === null || entry === component;

/** The effective statement: the latest (statement time, then recording order) naming one of the ids. */
export function effectiveVex(statements: readonly VexStatement[], artifactId: string, ids: readonly string[], purl: string): VexStatement | undefined {
  let best: VexStatement | undefined;
  for (const s of statements) {
    if (s.artifact_id !== artifactId || !ids.includes(s.vuln_id)) continue;
    if (s.component_purl !== null && s.component_purl !== purl) continue;
    if (!best || s.statement_at > best.statement_at || (s.statement_at.getTime() === best.statement_at.getTime() && s.recorded_at >= best.recorded_at))
      best = s;
  }
  return best;
}

export function matchInventory(
  components: readonly InventoryComponent[],
  advisoriesByKey: ReadonlyMap<string, readonly CandidateAdvisory[]>,
  kev: ReadonlyMap<string, string>,
  vex: readonly VexStatement[],
): { findings: FindingDraft[]; stats: MatchStats } {
  const stats: MatchStats = { components: components.length, unversioned: 0, unsupported: 0 };
  const byId = new Map<string, FindingDraft>();
  for (const c of components) {
    const candidates = advisoriesByKey.get(c.package_key);
    if (!candidates) continue;
    if (c.version === null) {
      stats.unversioned++;
      continue;
    }
    for (const a of candidates) {
      for (const entry of a.affected) {
        if (entry.key !== c.package_key || !releaseFits(entry.release, c.release)) continue;
        const m = matchCached(c.version, entry);
        if (!m.affected) {
          if (m.unsupported) stats.unsupported++;
          continue;
        }
        const id = `${c.artifact_id}\n${a.vuln_key}\n${c.purl}`;
        let f = byId.get(id);
        if (!f) {
          f = {
            artifact_id: c.artifact_id,
            vuln_key: a.vuln_key,
            component_purl: c.purl,
            component_name: c.name,
            component_version: c.version,
            ecosystem: c.ecosystem,
            advisory_ids: [],
            aliases: [],
            summary: a.summary,
            severity: a.severity as Severity,
            severity_rank: SEVERITY_RANK[a.severity as Severity] ?? -1,
            severity_source: a.severity_source,
            cvss_score: a.cvss_score,
            fixed_versions: [],
            record_fixed_versions: [],
            matched_by: [],
            known_exploited: false,
            kev_date_added: null,
            vex_status: null,
            vex_justification: null,
            vex_statement_id: null,
          };
          byId.set(id, f);
        }
        if (!f.advisory_ids.includes(a.id)) f.advisory_ids.push(a.id);
        for (const x of [a.vuln_key, a.id, ...a.aliases]) if (!f.aliases.includes(x)) f.aliases.push(x);
        const higher = maxSeverity(f.severity, a.severity as Severity);
        if (higher !== f.severity) {
          f.severity = higher;
          f.severity_rank = SEVERITY_RANK[higher];
          f.severity_source = a.severity_source;
          f.cvss_score = a.cvss_score;
        }
        f.summary ??= a.summary;
        f.fixed_versions.push(...m.fixed_versions);
        f.record_fixed_versions.push(...fixedVersions(entry));
        f.matched_by.push({ advisory: a.id, ecosystem: entry.ecosystem, release: entry.release, ...m.match });
      }
    }
  }
  const findings = [...byId.values()];
  for (const f of findings) {
    const order = fixOrdering(f.ecosystem);
    f.fixed_versions = orderVersions(f.fixed_versions, order);
    f.record_fixed_versions = orderVersions(f.record_fixed_versions, order);
    f.advisory_ids.sort();
    f.aliases.sort();
    for (const id of f.aliases) {
      const added = kev.get(id);
      if (added !== undefined) {
        f.known_exploited = true;
        if (f.kev_date_added === null || added < f.kev_date_added) f.kev_date_added = added;
      }
    }
    const s = effectiveVex(vex, f.artifact_id, f.aliases, f.component_purl);
    if (s) {
      f.vex_status = s.status;
      f.vex_justification = s.justification;
      f.vex_statement_id = s.id;
    }
  }
  return { findings, stats };
}

/** JSON with object keys sorted (jsonb reads keys back in its own order): for equality checks. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}
