import { join } from 'node:path';
import type { PrivateKey } from '@svc/release-core';
import { AgentError } from '../errors.js';
import type { MemberDriver } from '../drivers/driver.js';
import type { HealthChecker } from '../health/probes.js';
import type { Journal, TxContext } from '../journal/journal.js';
import { memberKey, memberRecord, type MemberRecord, type PlannedMember, type TxFacts } from '../journal/tx-data.js';
import type { TargetFetcher } from '../staging/fetcher.js';
import type { Outbox } from './outbox.js';
import type { DeviceIdentity } from './receipt.js';

/** Where a run of the state loop stops. */
export type Outcome =
  | { status: 'refused'; code: string; reason: string }
  | { status: 'waiting'; missing: string[] }
  | { status: 'retry-later'; tx: string; code: string; reason: string }
  | { status: 'rebooting'; tx: string }
  | { status: 'done'; tx: string; kind: 'signed' | 'legacy'; activation: string; health: string; outboxFile: string };

/** What the per-state steps need from the orchestrator. */
export interface StepEnv {
  journal: Journal;
  dataDir: string;
  fetcher: TargetFetcher;
  freeBytes?: (dir: string) => Promise<number>;
  /** SVC_AGENT_DOWNLOAD_ATTEMPTS: download attempts in a row without progress before failing. */
  downloadAttempts: number;
  /** Test seam: the wait between download attempts (staging/resume.ts downloadBackoffMs). */
  downloadBackoffMs?: (stalled: number) => number;
  health: HealthChecker;
  outbox: Outbox;
  device: DeviceIdentity & { key: PrivateKey };
  now(): Date;
  driver(m: PlannedMember): MemberDriver;
  log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * One state's work: act on the journaled state, journal the next one (and only then return
 * null, so the loop runs the next step), or stop with an outcome. Every step is idempotent:
 * after a crash the loop may run it again.
 */
export type Step = (ctx: TxContext, env: StepEnv) => Promise<Outcome | null>;

/** Records one member's journal facts (merged over what is there). */
export async function putMember(env: StepEnv, tx: string, m: PlannedMember, patch: Partial<MemberRecord>): Promise<void> {
  const facts: TxFacts = {};
  facts[memberKey(m.component)] = { ...memberRecord(env.journal.get(tx)!.data, m.component), ...patch };
  await env.journal.note(tx, facts);
}

/** The current member record, read fresh from the journal. */
export function currentRecord(env: StepEnv, tx: string, m: PlannedMember): MemberRecord {
  return memberRecord(env.journal.get(tx)!.data, m.component);
}

/** The activation group the journal says is in progress. */
export function groupOf(ctx: TxContext): number {
  const g = ctx.data.group;
  if (g === undefined) throw new AgentError('JOURNAL_CORRUPT', `transaction ${ctx.tx} in ${ctx.state} has no group`, { field: 'data.group' });
  return g;
}

export function groupCount(ctx: TxContext): number {
  return Math.max(...ctx.data.desired.members.map((m) => m.group)) + 1;
}

/** Per-transaction staging directory. */
export function stagingDir(env: StepEnv, tx: string): string {
  return join(env.dataDir, 'staging', encodeURIComponent(tx));
}
