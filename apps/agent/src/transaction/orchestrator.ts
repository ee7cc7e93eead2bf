import { join } from 'node:path';
import type { PrivateKey, PublicKey } from '@svc/release-core';
import type { ReleaseSettings } from '../config.js';
import { AgentError, isAgentError } from '../errors.js';
import type { DriverRegistry, MemberDriver } from '../drivers/driver.js';
import { probeHealthChecker, type HealthChecker } from '../health/probes.js';
import type { Journal, TxContext } from '../journal/journal.js';
import { durableDownloadBytes, type DesiredState, type PlannedMember } from '../journal/tx-data.js';
import { decideFailure } from '../state-machine/failure.js';
import { RECOVERY, RESUME_ACTIONS, type ResumeAction } from '../state-machine/recovery.js';
import { crashPoint } from '../state-machine/crash-points.js';
import { ACTIVATION_PHASE } from '../state-machine/transitions.js';
import type { TargetFetcher } from '../staging/fetcher.js';
import { DOWNLOAD } from '../staging/resume.js';
import { assertAssignment, type Assignment, type SignedAssignment } from './assignment.js';
import { legacyDesiredState } from './legacy.js';
import { Outbox } from './outbox.js';
import type { DeviceIdentity } from './receipt.js';
import type { Outcome, StepEnv } from './step-env.js';
import { STEPS } from './steps.js';
import { verifyAssignment } from './verify.js';

export interface OrchestratorDeps {
  dataDir: string;
  journal: Journal;
  /** null: no spec §2.2 settings; release pointers fail closed. */
  release: { settings: ReleaseSettings; trustedKeys: PublicKey[] } | null;
  fetcher: TargetFetcher;
  drivers: DriverRegistry;
  device: DeviceIdentity & { key: PrivateKey };
  health?: HealthChecker;
  now?: () => Date;
  maxResumptions?: number;
  /** Download attempts in a row without progress before the transaction fails (staging/resume.ts). */
  downloadAttempts?: number;
  downloadBackoffMs?: (stalled: number) => number;
  log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
  freeBytes?: (dir: string) => Promise<number>;
}

/**
 * Runs one assignment through the state machine (spec §3 rule 4): verify, wait for the
 * complete member set, persist desired state, then a loop over `STEPS`, one handler per
 * journaled state, until a stopping point. Every state change is journaled before it is
 * acted on; after a crash `resume()` does what the recovery table says for the state found.
 */
export class Orchestrator {
  readonly outbox: Outbox;
  private readonly d: OrchestratorDeps;
  private readonly now: () => Date;
  private readonly env: StepEnv;

  /** What each recovery action does before the loop runs the journaled state's step again. */
  private readonly resumeWith: Readonly<Record<ResumeAction, (ctx: TxContext) => Promise<void>>>;

  constructor(deps: OrchestratorDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
    this.outbox = new Outbox(join(deps.dataDir, 'outbox'));
    this.env = {
      journal: deps.journal,
      dataDir: deps.dataDir,
      fetcher: deps.fetcher,
      ...(deps.freeBytes ? { freeBytes: deps.freeBytes } : {}),
      downloadAttempts: deps.downloadAttempts ?? DOWNLOAD.defaultAttempts,
      ...(deps.downloadBackoffMs ? { downloadBackoffMs: deps.downloadBackoffMs } : {}),
      health: deps.health ?? probeHealthChecker,
      outbox: this.outbox,
      device: deps.device,
      now: this.now,
      driver: (m) => this.driver(m),
      log: (level, msg, fields) => this.log(level, msg, fields),
    };
    // Every step is idempotent, so most actions are "run the state's step again": partial
    // downloads keep their offset, staging and committing repeat, a rollback skips what it
    // restored, the receipt is rewritten. Only an interrupted activation changes state first.
    const again = async (): Promise<void> => undefined;
    this.resumeWith = {
      download: again,
      stage: again,
      activate: again,
      'rollback-then-retry': (ctx) => this.rollBackThenRetry(ctx),
      'confirm-reboot': again,
      'finish-commit': again,
      'finish-rollback': again,
      'write-receipt': again,
      none: again,
    };
  }

  async apply(a: Assignment): Promise<Outcome> {
    try {
      assertAssignment(a);
    } catch (e) {
      return this.refuse(e);
    }
    const tx = a.kind === 'signed' ? a.transactionId : `legacy:${a.rolloutId}`;
    // Delivered again (the channel retries): continue what the journal has.
    if (this.d.journal.get(tx) !== undefined) return this.drive(tx);
    const desired = a.kind === 'signed' ? await this.desiredSigned(a) : legacyDesiredState(a);
    if ('status' in desired) return desired;
    // spec §3 rule 5: the verified desired state is durable before anything is applied
    try {
      await this.d.journal.begin(tx, { desired });
    } catch (e) {
      return { status: 'retry-later', tx, code: isAgentError(e) ? e.code : 'UNEXPECTED', reason: (e as Error).message };
    }
    crashPoint('after-desired-state-persisted', tx);
    return this.drive(tx);
  }

  /** Finishes every transaction a crash or reboot interrupted, oldest first. */
  async resume(): Promise<Outcome[]> {
    const out: Outcome[] = [];
    for (const ctx of this.d.journal.unfinished()) {
      try {
        out.push(await this.resumeOne(ctx));
      } catch (e) {
        // The journal could not record the resumption: leave it for the next start.
        out.push({ status: 'retry-later', tx: ctx.tx, code: isAgentError(e) ? e.code : 'UNEXPECTED', reason: (e as Error).message });
      }
    }
    return out;
  }

  private async resumeOne(ctx: TxContext): Promise<Outcome> {
    const action = RECOVERY[ctx.state];
    // A download that made durable progress since the last start is not a crash loop: a device
    // rebooted again and again during a long download keeps going (each start must move bytes).
    const durable = durableDownloadBytes(ctx.data);
    if (ctx.state === 'downloading' && durable > (ctx.data.download_mark ?? 0)) {
      await this.d.journal.note(ctx.tx, { download_mark: durable });
      this.log('info', 'resuming transaction in downloading: download', { tx: ctx.tx, durable_bytes: durable });
      return this.drive(ctx.tx);
    }
    if (RESUME_ACTIONS[action].countsAsResumption) {
      const n = await this.d.journal.resumed(ctx.tx);
      // Loop guard: a transaction that keeps crashing the agent is failed, not retried forever.
      if (n > (this.d.maxResumptions ?? 3)) {
        this.log('error', 'loop guard: failing transaction', { tx: ctx.tx, resumptions: n, state: ctx.state });
        await this.fail(ctx, new AgentError('LOOP_GUARD', `transaction ${ctx.tx} interrupted ${n} times`, { field: 'tx' }));
        return this.drive(ctx.tx);
      }
    }
    this.log('info', `resuming transaction in ${ctx.state}: ${action}`, { tx: ctx.tx });
    await this.resumeWith[action](ctx);
    return this.drive(ctx.tx);
  }

  /** spec §3 rule 4: an interrupted activation is rolled back conservatively before any retry. */
  private async rollBackThenRetry(ctx: TxContext): Promise<void> {
    await this.d.journal.transition(ctx.tx, 'failure', {
      retry: true,
      failure: { code: 'INTERRUPTED', message: `interrupted in ${ctx.state}`, component: null },
    });
  }

  /** The channel uploaded the receipt: close the transaction and drop the outbox copy. */
  async markReported(tx: string): Promise<void> {
    const ctx = this.d.journal.get(tx);
    if (ctx?.state !== 'receipt-persisted') return;
    await this.d.journal.transition(tx, 'uploaded');
    await this.outbox.remove(tx, ctx.data.desired.kind === 'legacy' ? 'legacy-status' : 'receipt');
  }

  private async desiredSigned(a: SignedAssignment): Promise<DesiredState | Outcome> {
    if (this.d.release === null) {
      // spec §2.2 rule 2: without the release settings a release pointer fails closed
      const reason = 'release pointer refused: SVC_RELEASE_* settings are not provisioned';
      this.log('warn', reason, { tx: a.transactionId });
      return { status: 'refused', code: 'RELEASE_SETTINGS_ABSENT', reason };
    }
    try {
      const v = verifyAssignment(a, {
        ...this.d.release,
        now: this.now(),
        lastOnlineAt: this.d.journal.lastOnlineAt,
        kinds: Object.keys(this.d.drivers),
      });
      if (v.status === 'waiting') return v;
      return v.desired;
    } catch (e) {
      return this.refuse(e);
    }
  }

  private refuse(e: unknown): Outcome {
    const code = isAgentError(e) ? e.code : ((e as { code?: string }).code ?? 'RELEASE_REFUSED');
    const reason = (e as Error).message;
    this.log('warn', `assignment refused: ${reason}`, { code });
    return { status: 'refused', code, reason };
  }

  /** The state loop: the journaled state's step, again and again, until one stops. */
  private async drive(tx: string): Promise<Outcome> {
    for (;;) {
      const ctx = this.d.journal.get(tx)!;
      try {
        const stop = await STEPS[ctx.state](ctx, this.env);
        if (stop !== null) return stop;
      } catch (err) {
        const decision = decideFailure(ctx.state, err);
        const code = isAgentError(err) ? err.code : 'UNEXPECTED';
        this.log('warn', `transaction ${tx} failed in ${ctx.state}: ${(err as Error).message}`, { code, decision });
        if (decision === 'retry-later') return { status: 'retry-later', tx, code, reason: (err as Error).message };
        try {
          await this.fail(ctx, err);
        } catch (journalErr) {
          // Cannot even record the failure: stop here; resume() starts from the last durable state.
          return { status: 'retry-later', tx, code: 'JOURNAL_WRITE_FAILED', reason: (journalErr as Error).message };
        }
      }
    }
  }

  /** Journals a failure: inside the activation phase it rolls back, before it the transaction fails. */
  private async fail(ctx: TxContext, err: unknown): Promise<void> {
    const failure = {
      code: isAgentError(err) ? err.code : 'UNEXPECTED',
      message: (err as Error).message,
      component: isAgentError(err) ? (err.field ?? null) : null,
    };
    // A journal write that failed mid-activation says nothing about the release: treat it like
    // a crash (roll back, then retry), a bounded number of times.
    const retry = isAgentError(err, 'JOURNAL_WRITE_FAILED') && (ctx.data.retries ?? 0) < (this.d.maxResumptions ?? 3);
    const data = { failure, retry, ...(isAgentError(err, 'HEALTH_FAILED') ? { health_verdict: 'unhealthy' as const } : {}) };
    await this.d.journal.transition(ctx.tx, ACTIVATION_PHASE.has(ctx.state) ? 'failure' : 'fatal', data);
  }

  private driver(m: PlannedMember): MemberDriver {
    const d = this.d.drivers[m.kind];
    if (d === undefined) throw new AgentError('MEMBER_KIND_UNSUPPORTED', `no driver for ${m.kind}`, { field: `components.${m.component}.kind` });
    return d;
  }

  private log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void {
    this.d.log?.(level, msg, fields);
  }
}
