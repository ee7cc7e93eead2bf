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

/** `fixed_versions`: the versions that fix the matched version (matchAffected). */
export type MatchResult = { affected: true; match: MatchHow; fixed_versions: string[] } | { affected: false; unsupported: boolean };

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

/** The ordering a range is evaluated with: SemVer for `SEMVER`, the ecosystem's for `ECOSYSTEM`; none for `GIT`. */
function rangeOrdering(r: OsvRange, ecosystem: string): Ordering | undefined {
  return r.type === 'SEMVER' ? semverOrdering() : r.type === 'ECOSYSTEM' ? ecosystemOrdering(ecosystem) : undefined;
}

/** The order fix versions are listed in: the ecosystem's ordering, else SemVer's. */
export function fixOrdering(ecosystem: string | null): Ordering {
  return (ecosystem === null ? undefined : ecosystemOrdering(ecosystem)) ?? semverOrdering();
}

/**
 * Distinct versions in the ordering's order; those it cannot read follow, in the order given
 * (nothing is dropped for being unreadable).
 */
export function orderVersions(versions: readonly string[], o: Ordering): string[] {
  const read: { raw: string; v: unknown }[] = [];
  const unread: string[] = [];
  for (const raw of new Set(versions)) {
    const v = parseCached(o, raw);
    if (v === undefined) unread.push(raw);
    else read.push({ raw, v });
  }
  read.sort((a, b) => o.compare(a.v, b.v) || (a.raw < b.raw ? -1 : a.raw > b.raw ? 1 : 0));
  return [...read.map((x) => x.raw), ...unread];
}

/** The entry's `fixed` versions that its orderings place above `version` (a version matched by the list alone). */
function fixesAbove(version: string, entry: AffectedEntry): string[] {
  const out: string[] = [];
  for (const r of entry.ranges) {
    const o = rangeOrdering(r, entry.ecosystem);
    const v = o?.parse(version);
    if (o === undefined || v === undefined) continue;
    for (const e of r.events) {
      if (typeof e.fixed !== 'string') continue;
      const fixed = parseCached(o, e.fixed);
      if (fixed !== undefined && o.compare(fixed, v) > 0) out.push(e.fixed);
    }
  }
  return out;
}

/**
 * Is `version` affected by this entry, how (the first matching rule: the versions list, then
 * the ranges in record order), and which versions fix it: the `fixed` bound of every range
 * interval that holds the version (a fix of another interval, e.g. an older release line's,
 * does not fix what runs), in the ecosystem's order. A version matched by the list alone
 * takes the entry's fixes its orderings place above it; with no ordering, none can be shown
 * to be above it and none is named.
 */
export function matchAffected(version: string, entry: AffectedEntry): MatchResult {
  const listed = entry.versions.includes(version);
  let match: MatchHow | undefined = listed ? { how: 'versions', version } : undefined;
  let unsupported = false;
  const fixes: string[] = [];
  for (const r of entry.ranges) {
    if (r.type !== 'SEMVER' && r.type !== 'ECOSYSTEM') continue;
    const o = rangeOrdering(r, entry.ecosystem);
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
    if (!hit) continue;
    match ??= { how: 'range', range_type: r.type, ordering: o.name, ...hit };
    if (hit.fixed !== null) fixes.push(hit.fixed);
  }
  if (match === undefined) return { affected: false, unsupported };
  if (listed && fixes.length === 0) fixes.push(...fixesAbove(version, entry));
  return { affected: true, match, fixed_versions: orderVersions(fixes, fixOrdering(entry.ecosystem)) };
}

/** Every `fixed` version of the entry's ranges (the record's fixes, whatever runs), in the ecosystem's order. */
export function fixedVersions(entry: AffectedEntry): string[] {
  const out: string[] = [];
  for (const r of entry.ranges) for (const e of r.events) if (typeof e.fixed === 'string') out.push(e.fixed);
  return orderVersions(out, fixOrdering(entry.ecosystem));
}

/** A range of a record that matching cannot evaluate, and why. */
export interface RangeProblem {
  range_type: string;
  reason: string;
}

/**
 * The `SEMVER` and `ECOSYSTEM` ranges of an entry that matching skips, one reason each: no
 * ordering for the ecosystem, or a bound the ordering cannot read (the first such bound).
 * `GIT` ranges name commits and are never evaluated, by design: not listed.
 */
export function rangeProblems(entry: AffectedEntry): RangeProblem[] {
  const out: RangeProblem[] = [];
  for (const r of entry.ranges) {
    if (r.type !== 'SEMVER' && r.type !== 'ECOSYSTEM') continue;
    const o = rangeOrdering(r, entry.ecosystem);
    if (o === undefined) {
      out.push({ range_type: r.type, reason: `no version ordering for ${entry.ecosystem}: only the versions list is matched` });
      continue;
    }
    for (const e of r.events) {
      if (eventBound(e, o) !== undefined) continue;
      const [kind, raw] = (Object.entries(e) as [string, unknown][])[0] ?? ['event', ''];
      out.push({ range_type: r.type, reason: `${kind} ${JSON.stringify(raw)}: not a version in the ${o.name} ordering` });
      break;
    }
  }
  return out;
}
