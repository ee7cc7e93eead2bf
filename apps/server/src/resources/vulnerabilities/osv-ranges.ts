/**
 * Whether a version is affected by one OSV `affected[]` entry, and how: the exact
 * `versions` list first, then each `SEMVER` or `ECOSYSTEM` range evaluated with the
 * ecosystem's ordering (OSV schema "Evaluation": events sorted by version, `introduced`
 * opens, `fixed` and `last_affected` close, `limit` bounds the range). `GIT` ranges name
 * commits, not versions: they are never evaluated. Pure.
 */
import { ecosystemOrdering, semverOrdering, type Ordering } from './ordering.js';

export interface OsvEvent {
  introduced?: string;
  fixed?: string;
  last_affected?: string;
  limit?: string;
}

export interface OsvRange {
  type: string;
  events: OsvEvent[];
}

export interface AffectedEntry {
  /** Base ecosystem (`Debian`, not `Debian:12`). */
  ecosystem: string;
  versions: string[];
  ranges: OsvRange[];
}

/** How a finding matched: recorded on it (docs/vulnerabilities.md "How a finding matched"). */
export type MatchHow =
  | { how: 'versions'; version: string }
  | {
      how: 'range';
      range_type: 'SEMVER' | 'ECOSYSTEM';
      ordering: Ordering['name'];
      introduced: string | null;
      fixed: string | null;
      last_affected: string | null;
    };

export type MatchResult = { affected: true; match: MatchHow } | { affected: false; unsupported: boolean };

type Bound = { kind: 'introduced' | 'fixed' | 'last_affected' | 'limit'; raw: string; parsed: unknown };

// the same few bounds are parsed for every component that meets a record: remember them
const parsedBounds = new Map<string, unknown>();
function parseCached(o: Ordering, raw: string): unknown {
  const key = `${o.name}\n${raw}`;
  if (parsedBounds.has(key)) return parsedBounds.get(key);
  const v = o.parse(raw);
  if (parsedBounds.size > 100_000) parsedBounds.clear();
  parsedBounds.set(key, v);
  return v;
}

function eventBound(e: OsvEvent, o: Ordering): Bound | undefined {
  const entries = Object.entries(e) as [Bound['kind'], string][];
  const first = entries.find(([k, v]) => ['introduced', 'fixed', 'last_affected', 'limit'].includes(k) && typeof v === 'string');
  if (!first) return undefined;
  const [kind, raw] = first;
  // "0" is the start of time, whatever the ordering; "*" in limit is the end of time
  if ((kind === 'introduced' && raw === '0') || (kind === 'limit' && raw === '*')) return { kind, raw, parsed: null };
  const parsed = parseCached(o, raw);
  return parsed === undefined ? undefined : { kind, raw, parsed };
}

/** One range: the interval of the walk that contains `v`, or undefined (not affected or unparseable). */
function inRange(
  v: unknown,
  range: OsvRange,
  o: Ordering,
): { introduced: string | null; fixed: string | null; last_affected: string | null } | 'unparseable' | undefined {
  const bounds: Bound[] = [];
  for (const e of range.events) {
    const b = eventBound(e, o);
    if (b === undefined) return 'unparseable';
    bounds.push(b);
  }
  const cmp = (a: Bound, b: Bound) => {
    if (a.parsed === null || b.parsed === null) {
      const rank = (x: Bound) => (x.parsed !== null ? 0 : x.kind === 'introduced' ? -1 : 1);
      return rank(a) - rank(b);
    }
    return o.compare(a.parsed, b.parsed);
  };
  bounds.sort(cmp);
  for (const l of bounds.filter((b) => b.kind === 'limit')) if (l.parsed !== null && o.compare(v, l.parsed) >= 0) return undefined;
  let open: string | null | undefined;
  let result: { introduced: string | null; fixed: string | null; last_affected: string | null } | undefined;
  for (const b of bounds) {
    if (b.kind === 'introduced') {
      if (b.parsed === null || o.compare(v, b.parsed) >= 0) {
        open = b.raw;
        result = { introduced: b.raw, fixed: null, last_affected: null };
      }
    } else if (b.kind === 'fixed') {
      if (o.compare(v, b.parsed) >= 0) result = undefined;
      else if (result && result.fixed === null && result.last_affected === null && open !== undefined) result.fixed = b.raw;
    } else if (b.kind === 'last_affected') {
      if (o.compare(v, b.parsed) > 0) result = undefined;
      else if (result && result.fixed === null && result.last_affected === null && open !== undefined) result.last_affected = b.raw;
    }
  }
  return result;
}

/** Is `version` affected by this entry, and how (the first matching rule)? */
export function matchAffected(version: string, entry: AffectedEntry): MatchResult {
  if (entry.versions.includes(version)) return { affected: true, match: { how: 'versions', version } };
  let unsupported = false;
  for (const r of entry.ranges) {
    if (r.type !== 'SEMVER' && r.type !== 'ECOSYSTEM') continue;
    const o = r.type === 'SEMVER' ? semverOrdering() : ecosystemOrdering(entry.ecosystem);
    if (o === undefined) {
      unsupported = true;
      continue;
    }
    const v = o.parse(version);
    if (v === undefined) continue;
    const hit = inRange(v, r, o);
    if (hit === 'unparseable') {
      unsupported = true;
      continue;
    }
    if (hit) return { affected: true, match: { how: 'range', range_type: r.type, ordering: o.name, ...hit } };
  }
  return { affected: false, unsupported };
}

/** Every `fixed` version of the entry's ranges (the versions that fix it), in record order. */
export function fixedVersions(entry: AffectedEntry): string[] {
  const out: string[] = [];
  for (const r of entry.ranges) for (const e of r.events) if (typeof e.fixed === 'string' && !out.includes(e.fixed)) out.push(e.fixed);
  return out;
}
