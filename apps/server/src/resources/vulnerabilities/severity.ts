/**
 * A record's qualitative severity: its own rating when it has one (OSV
 * `database_specific.severity`, as GitHub and others publish it, or an `Ubuntu` severity),
 * else computed from its CVSS vector by a maintained calculator (ae-cvss-calculator: v4.0
 * first, then v3.1/v3.0, then v2), with FIRST's qualitative scale. Pure.
 */
import cvss from 'ae-cvss-calculator';
import { SERVER_TUNING } from '../../limits.js';

export const SEVERITIES = ['critical', 'high', 'medium', 'low', 'none', 'unknown'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Ordered ranks: `severity >= X` filters compare these (unknown sorts below none). */
export const SEVERITY_RANK: Record<Severity, number> = { critical: 4, high: 3, medium: 2, low: 1, none: 0, unknown: -1 };

export interface RatedSeverity {
  severity: Severity;
  /** Where it came from: `database`, `ubuntu`, `cvss_v4`, `cvss_v3`, `cvss_v2` or `none`. */
  source: string;
  score: number | null;
  vector: string | null;
}

const WORDS: Record<string, Severity> = {
  critical: 'critical',
  high: 'high',
  important: 'high',
  moderate: 'medium',
  medium: 'medium',
  low: 'low',
  negligible: 'low',
  none: 'none',
};

/** FIRST CVSS v3/v4 qualitative rating scale (v2 has no critical: 7.0-10.0 is high). */
function fromScore(score: number, v2 = false): Severity {
  if (score === 0) return 'none';
  if (score < 4) return 'low';
  if (score < 7) return 'medium';
  if (score < 9 || v2) return 'high';
  return 'critical';
}

/**
 * Scores already computed, by type and vector: a feed repeats a few thousand vectors over
 * hundreds of thousands of records, and the calculator parses each one from scratch.
 * Bounded: cleared when full.
 */
const scoreCache = new Map<string, number | undefined>();

/** The base score of a vector, or undefined when the calculator cannot score it whole. */
export function cvssBaseScore(type: 'CVSS_V4' | 'CVSS_V3' | 'CVSS_V2', vector: string): number | undefined {
  const key = `${type} ${vector}`;
  if (scoreCache.has(key)) return scoreCache.get(key);
  const score = computeBaseScore(type, vector);
  if (scoreCache.size >= SERVER_TUNING.severityScoreCacheEntries) scoreCache.clear();
  scoreCache.set(key, score);
  return score;
}

function computeBaseScore(type: 'CVSS_V4' | 'CVSS_V3' | 'CVSS_V2', vector: string): number | undefined {
  try {
    const v =
      type === 'CVSS_V4'
        ? new cvss.Cvss4P0(vector)
        : type === 'CVSS_V2'
          ? new cvss.Cvss2(vector)
          : vector.startsWith('CVSS:3.0/')
            ? new cvss.Cvss3P0(vector)
            : new cvss.Cvss3P1(vector);
    if (!v.isBaseFullyDefined()) return undefined;
    const base = v.calculateScores().base;
    return typeof base === 'number' && Number.isFinite(base) ? base : undefined;
  } catch {
    return undefined;
  }
}

/** The rating of one OSV record (`severity[]` and `database_specific`). */
export function rateOsvRecord(record: { severity?: unknown; database_specific?: unknown }): RatedSeverity {
  const db = record.database_specific as { severity?: unknown } | null | undefined;
  const word = typeof db?.severity === 'string' ? WORDS[db.severity.toLowerCase()] : undefined;
  const entries = Array.isArray(record.severity) ? (record.severity as { type?: unknown; score?: unknown }[]) : [];
  const vectorOf = (type: string) => entries.find((s) => s?.type === type && typeof s.score === 'string')?.score as string | undefined;
  const v4 = vectorOf('CVSS_V4');
  const v3 = vectorOf('CVSS_V3');
  const v2 = vectorOf('CVSS_V2');
  const best = [
    ['CVSS_V4', v4],
    ['CVSS_V3', v3],
    ['CVSS_V2', v2],
  ] as const;
  let scored: { source: string; score: number; vector: string; type: string } | undefined;
  for (const [type, vector] of best) {
    if (vector === undefined) continue;
    const score = cvssBaseScore(type, vector);
    if (score !== undefined) {
      scored = { source: type.toLowerCase(), score, vector, type };
      break;
    }
  }
  if (word !== undefined) return { severity: word, source: 'database', score: scored?.score ?? null, vector: scored?.vector ?? null };
  const ubuntu = vectorOf('Ubuntu');
  if (ubuntu !== undefined && WORDS[ubuntu.toLowerCase()] !== undefined)
    return { severity: WORDS[ubuntu.toLowerCase()]!, source: 'ubuntu', score: null, vector: null };
  if (scored) return { severity: fromScore(scored.score, scored.type === 'CVSS_V2'), source: scored.source, score: scored.score, vector: scored.vector };
  return { severity: 'unknown', source: 'none', score: null, vector: null };
}

/** The higher of two severities. */
export function maxSeverity(a: Severity, b: Severity): Severity {
  return SEVERITY_RANK[a] >= SEVERITY_RANK[b] ? a : b;
}
