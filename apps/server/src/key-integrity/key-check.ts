import { ConfigError } from '../config.js';

/**
 * The start-up key check: every key the database expects is stored, opened by the KEK and the key
 * the database records for it (docs/server.md, keys and their integrity). Each kind of key
 * is one named checker; the server runs them all at start and on `node dist/main.js check`.
 */

/** Where every failure line sends the operator. */
export const KEY_DOC = 'docs/server.md#keys-and-their-integrity';

/** The recoveries an operator can ask for with SVC_KEY_RECOVERY. */
export const KEY_RECOVERIES = ['tuf-online-rotate', 'evidence-rotate', 'device-ca-rotate'] as const;
export type KeyRecovery = (typeof KEY_RECOVERIES)[number];

export interface KeyReport {
  /** The key and its tenant, e.g. `TUF targets key of tenant <id>`. */
  key: string;
  /** The tenant the key belongs to; none for the server's own keys. */
  tenantId?: string;
  /** `absent`: not there and not expected yet (or legitimately elsewhere, the TUF root key in offline custody). */
  state: 'ok' | 'absent' | 'missing' | 'unreadable' | 'mismatch';
  /** One line naming the key, its tenant and where it is stored, for every failing state. */
  problem?: string;
  /** What the operator can do, ending with KEY_DOC. */
  remedy?: string;
  /** Why an absent key is fine. */
  note?: string;
}

export interface KeyChecker {
  name: string;
  check(): Promise<KeyReport[]>;
  /** A recovery this checker performs when SVC_KEY_RECOVERY asks for it; returns what it did, one line each. */
  recovery?: { mode: KeyRecovery; run(failed: KeyReport[]): Promise<string[]> };
}

export interface KeyCheckResult {
  reports: KeyReport[];
  /** What the recovery did. */
  recovered: string[];
  /** The first failing key: the one line the start fails with. */
  failure: KeyReport | undefined;
}

export function isFailing(r: KeyReport): boolean {
  return r.state !== 'ok' && r.state !== 'absent';
}

/** Runs every checker; the checkers offering one of `recoveries` repair what they can and check again. */
export async function runKeyCheck(checkers: readonly KeyChecker[], recoveries: ReadonlySet<KeyRecovery> = new Set()): Promise<KeyCheckResult> {
  const reports: KeyReport[] = [];
  const recovered: string[] = [];
  for (const checker of checkers) {
    let found = await checker.check();
    const failed = found.filter(isFailing);
    if (failed.length > 0 && checker.recovery !== undefined && recoveries.has(checker.recovery.mode)) {
      recovered.push(...(await checker.recovery.run(failed)));
      found = await checker.check();
    }
    reports.push(...found);
  }
  return { reports, recovered, failure: reports.find(isFailing) };
}

/** The one line a failing check ends with (main.ts prefixes `svc-server: `). */
export function failureLine(r: KeyReport): string {
  return `key check failed: ${r.problem ?? r.key}; ${r.remedy ?? `see ${KEY_DOC}`}`;
}

/** One stdout line per checked key for `node dist/main.js check`. */
export function reportLine(r: KeyReport): string {
  if (r.state === 'ok') return `ok      ${r.key}`;
  if (r.state === 'absent') return `absent  ${r.key}${r.note ? ` (${r.note})` : ''}`;
  return `FAILED  ${r.problem ?? r.key}`;
}

/**
 * SVC_KEY_RECOVERY: unset, or a comma-separated list of KEY_RECOVERIES (spaces around the
 * commas allowed, each at most once), e.g. `device-ca-rotate,evidence-rotate`.
 */
export function keyRecoveryFromEnv(env: NodeJS.ProcessEnv): ReadonlySet<KeyRecovery> {
  const value = env.SVC_KEY_RECOVERY;
  const out = new Set<KeyRecovery>();
  if (value === undefined || value.trim() === '') return out;
  for (const item of value.split(',').map((v) => v.trim())) {
    if (!(KEY_RECOVERIES as readonly string[]).includes(item)) {
      throw new ConfigError(
        `SVC_KEY_RECOVERY: expected a comma-separated list of ${KEY_RECOVERIES.join(', ')}, got ${JSON.stringify(item)} in ${JSON.stringify(value)}`,
      );
    }
    if (out.has(item as KeyRecovery)) throw new ConfigError(`SVC_KEY_RECOVERY: ${item} is listed twice in ${JSON.stringify(value)}`);
    out.add(item as KeyRecovery);
  }
  return out;
}
