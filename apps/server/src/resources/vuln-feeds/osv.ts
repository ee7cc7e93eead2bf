/**
 * One OSV record (OSV schema, validated by the official JSON schema) read into what the
 * server stores: its ids and aliases merged into one vulnerability key, its qualitative
 * severity, and its affected entries keyed like SBOM components (vulnerabilities/
 * ecosystems.ts). A record that fails is skipped with the reason, never stored in part; a
 * range matching cannot evaluate (no ordering for its ecosystem, a bound the ordering cannot
 * read) is stored as written and named with its reason, for the import to count.
 * Pure.
 */
import { identifierProblem, parseJsonDocument } from '../../input-text.js';
import { validateAgainst } from '../json-schemas.js';
import { osvPackageIdentity } from '../vulnerabilities/ecosystems.js';
import type { RangeSkip } from '../../store/vuln-tables.js';
import { rangeProblems, type AffectedEntry, type OsvRange } from '../vulnerabilities/osv-ranges.js';
import { rateOsvRecord, type RatedSeverity } from '../vulnerabilities/severity.js';
import { SERVER_LIMITS } from '../../limits.js';

/** An affected entry as stored: the matching rules plus the key and release it applies to. */
export interface StoredAffected extends AffectedEntry {
  key: string;
  release: string | null;
  name: string;
}

export interface OsvAdvisory {
  id: string;
  vulnKey: string;
  aliases: string[];
  modified: Date;
  published: Date | null;
  withdrawn: Date | null;
  summary: string | null;
  rating: RatedSeverity;
  affected: StoredAffected[];
  /** the record's `SEMVER` and `ECOSYSTEM` ranges matching cannot evaluate (stored all the same), and why */
  rangeSkips: RangeSkip[];
}

/**
 * Aliases merged: records naming the same CVE are one vulnerability, keyed by that CVE
 * (the lowest, when several); a record with no CVE is keyed by its own id.
 */
export function vulnKeyOf(id: string, aliases: readonly string[]): string {
  const cves = [id, ...aliases].filter((a) => /^CVE-\d{4}-\d+$/.test(a)).sort();
  return cves[0] ?? id;
}

interface RawRecord {
  id: string;
  modified: string;
  published?: string;
  withdrawn?: string;
  aliases?: string[] | null;
  summary?: string;
  details?: string;
  severity?: unknown;
  database_specific?: unknown;
  affected?: { package?: { ecosystem: string; name: string; purl?: string }; ranges?: OsvRange[]; versions?: string[] }[] | null;
}

/** Reads a record's bytes: the advisory, or the reason it is skipped. */
export function readOsvRecord(bytes: Buffer): OsvAdvisory | { skip: string } {
  let doc: Record<string, unknown>;
  try {
    // the text rule of every stored string (input-text.ts), named by the record's field path
    doc = parseJsonDocument(bytes, SERVER_LIMITS.feeds.maxRecordBytes, (m) => new Error(m.replace(/^body: /, '')));
  } catch (e) {
    return { skip: (e as Error).message };
  }
  const problem = validateAgainst('osv', doc);
  if (problem !== undefined) return { skip: `not an OSV record: ${problem}` };
  const r = doc as unknown as RawRecord;
  const affectedRaw = r.affected ?? [];
  if (affectedRaw.length > SERVER_LIMITS.feeds.maxAffected) return { skip: `affected: more than ${SERVER_LIMITS.feeds.maxAffected} entries` };
  const affected: StoredAffected[] = [];
  const rangeSkips: RangeSkip[] = [];
  for (const a of affectedRaw) {
    // an entry without a package names commits only (GIT ranges): nothing a version can match
    if (!a.package) continue;
    if ((a.versions?.length ?? 0) > SERVER_LIMITS.feeds.maxVersions)
      return { skip: `affected.versions: more than ${SERVER_LIMITS.feeds.maxVersions} versions` };
    const id = osvPackageIdentity(a.package);
    const longKey = identifierProblem(id.key);
    if (longKey !== undefined) return { skip: `affected[${affectedRaw.indexOf(a)}].package.name: ${longKey}` };
    const entry: StoredAffected = {
      key: id.key,
      ecosystem: id.ecosystem,
      release: id.release,
      name: a.package.name,
      versions: a.versions ?? [],
      ranges: (a.ranges ?? []).map((x) => ({ type: x.type, events: x.events })),
    };
    affected.push(entry);
    for (const p of rangeProblems(entry)) rangeSkips.push({ record: r.id, package: `${a.package.ecosystem}|${a.package.name}`, ...p });
  }
  const aliases = [...new Set((r.aliases ?? []).filter((x) => x !== r.id))];
  for (const [field, value] of [['id', r.id], ...aliases.map((a) => ['aliases', a])] as const) {
    const long = identifierProblem(value);
    if (long !== undefined) return { skip: `${field}: ${long}` };
  }
  const date = (s: string | undefined) => (s === undefined ? null : new Date(s));
  const summary = (r.summary ?? r.details ?? '').trim();
  return {
    id: r.id,
    vulnKey: vulnKeyOf(r.id, aliases),
    aliases,
    modified: new Date(r.modified),
    published: date(r.published),
    withdrawn: date(r.withdrawn),
    summary: summary === '' ? null : summary.slice(0, 1000),
    rating: rateOsvRecord(r),
    affected,
    rangeSkips,
  };
}
