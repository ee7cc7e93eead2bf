import { ConfigError } from '../config.js';

/**
 * The start-up key check: every key the database expects is on disk, readable and the key
 * the database records for it (docs/server.md, keys and their integrity). Each kind of key
 * is one named checker; the server runs them all at start and on `node dist/main.js check`.
 */

/** Where every failure line sends the operator. */
export const KEY_DOC = 'docs/server.md#keys-and-their-integrity';

/** The recoveries an operator can ask for with SVC_KEY_RECOVERY. */
export const KEY_RECOVERIES = ['tuf-online-rotate', 'evidence-rotate'] as const;
export type KeyRecovery = (typeof KEY_RECOVERIES)[number];

export interface KeyReport {
  /** The key and its tenant, e.g. `TUF targets key of tenant <id>`. */
  key: string;
  /** The tenant the key belongs to; none for the server's own keys. */
  tenantId?: string;
  /** `absent`: not there and not expected yet (or legitimately elsewhere, the TUF root key in offline custody). */
  state: 'ok' | 'absent' | 'missing' | 'unreadable' | 'mismatch';
  /** One line naming the key, its tenant and its file, for every failing state. */
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

/** Runs every checker; with `recovery`, the checkers offering it repair what they can and check again. */
export async function runKeyCheck(checkers: readonly KeyChecker[], recovery?: KeyRecovery): Promise<KeyCheckResult> {
  const reports: KeyReport[] = [];
  const recovered: string[] = [];
  for (const checker of checkers) {
    let found = await checker.check();
    const failed = found.filter(isFailing);
    if (failed.length > 0 && recovery !== undefined && checker.recovery?.mode === recovery) {
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

/** SVC_KEY_RECOVERY: unset, or one of KEY_RECOVERIES. */
export function keyRecoveryFromEnv(env: NodeJS.ProcessEnv): KeyRecovery | undefined {
  const value = env.SVC_KEY_RECOVERY;
  if (value === undefined || value === '') return undefined;
  if ((KEY_RECOVERIES as readonly string[]).includes(value)) return value as KeyRecovery;
  throw new ConfigError(`SVC_KEY_RECOVERY: must be one of ${KEY_RECOVERIES.join(', ')}, got ${JSON.stringify(value)}`);
}
