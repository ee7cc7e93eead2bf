import { ReleaseError } from '../errors.js';
import { IDENTIFIER_PATTERNS as P } from '../identifiers.js';
import { LIMITS } from '../limits.js';
import { Checker, join } from '../schema/checker.js';
import type { Digest } from '../digest.js';

/** How a member's bytes reached the device. */
export type DeliveryMethod = 'full' | 'delta' | 'adaptive';
export const DELIVERY_METHODS: readonly DeliveryMethod[] = ['full', 'delta', 'adaptive'];

/** Why a delta offered for a member was not used and the full target was fetched instead. */
export type DeltaFallback = 'delta-refused' | 'source-changed' | 'apply-failed' | 'wrong-reconstruction';
export const DELTA_FALLBACKS: readonly DeltaFallback[] = ['delta-refused', 'source-changed', 'apply-failed', 'wrong-reconstruction'];

export interface MemberDelivery {
  component: string;
  method: DeliveryMethod;
  /** Bytes received for this member: the delta, plus the full target after a fallback. */
  bytes_transferred: number;
  /** The signed length of the member. */
  full_length: number;
  /** delta: the member it was rebuilt from; with a fallback, the one a delta was tried from. */
  source_digest?: Digest;
  fallback?: DeltaFallback;
  /** Download attempts the member took (1: one uninterrupted stream). */
  attempts?: number;
  /** Attempts that continued from bytes an interrupted one had kept (a dropped link, a reboot). */
  resumes?: number;
  /** The download did not complete: the agent's error code (DOWNLOAD_RETRIES_EXHAUSTED, ...). */
  failure?: string;
  /** What the last failed attempt said, for the operator. */
  failure_detail?: string;
}

/** A failure code in a delivery report: an agent error code. */
const FAILURE_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

/**
 * The delivery report an agent sends beside a receipt (docs/delta-updates.md): per member, the
 * path its bytes took. It is not part of the signed receipt (contracts §3 fixes the receipt's
 * keys); the receipt's signed `resulting_digest` is what says which bytes run.
 */
export interface DeliveryReport {
  members: MemberDelivery[];
}

/** Narrows an untrusted delivery report, naming every bad field (DELIVERY_INVALID). */
export function validateDeliveryReport(value: unknown): DeliveryReport {
  const c = new Checker();
  const o = c.object(value, '', ['members']);
  const members = o ? c.array(o.members, 'members', 1, LIMITS.components) : undefined;
  const seen = new Set<string>();
  members?.forEach((m, i) => {
    const at = `members[${i}]`;
    const r = c.object(
      m,
      at,
      ['component', 'method', 'bytes_transferred', 'full_length'],
      ['source_digest', 'fallback', 'attempts', 'resumes', 'failure', 'failure_detail'],
    );
    if (!r) return;
    const name = c.string(r.component, join(at, 'component'), { pattern: P.componentName, what: 'component name' });
    if (name !== undefined) {
      if (seen.has(name)) c.add(join(at, 'component'), `component ${JSON.stringify(name)} appears twice`);
      seen.add(name);
    }
    const method = c.oneOf(r.method, join(at, 'method'), DELIVERY_METHODS);
    c.integer(r.bytes_transferred, join(at, 'bytes_transferred'), 0);
    c.integer(r.full_length, join(at, 'full_length'), 0);
    if (r.source_digest !== undefined) c.digest(r.source_digest, join(at, 'source_digest'));
    if (r.fallback !== undefined) {
      c.oneOf(r.fallback, join(at, 'fallback'), DELTA_FALLBACKS);
      if (method !== undefined && method !== 'full')
        c.add(join(at, 'fallback'), `a fallback ends in the full download, method must be "full", got "${method}"`);
    }
    if (r.attempts !== undefined) c.integer(r.attempts, join(at, 'attempts'), 1);
    if (r.resumes !== undefined) c.integer(r.resumes, join(at, 'resumes'), 0);
    if (r.failure !== undefined) c.string(r.failure, join(at, 'failure'), { pattern: FAILURE_CODE, max: 64, what: 'error code' });
    if (r.failure_detail !== undefined) {
      c.string(r.failure_detail, join(at, 'failure_detail'), { max: LIMITS.deliveryFailureDetailChars });
      if (r.failure === undefined) c.add(join(at, 'failure_detail'), 'a failure detail comes with its failure code');
    }
    if (method === 'delta' && r.source_digest === undefined) c.add(join(at, 'source_digest'), 'a delta delivery names the member it was rebuilt from');
  });
  if (c.issues.length > 0) {
    const first = c.issues[0]!;
    const more = c.issues.length > 1 ? ` (and ${c.issues.length - 1} more)` : '';
    throw new ReleaseError('DELIVERY_INVALID', `invalid delivery report: ${first.path}: ${first.message}${more}`, { issues: c.issues });
  }
  return value as DeliveryReport;
}
