import { join } from 'node:path';
import type { PrivateKey, PublicKey } from '@svc/release-core';
import type { ReleaseSettings } from '../config.js';
import { AgentError, isAgentError } from '../errors.js';
import type { DriverRegistry, MemberDriver } from '../drivers/driver.js';
import type { HealthChecker } from '../health/probes.js';
import { probeHealthChecker } from '../health/probes.js';
import { parseHealthPolicy } from '../health/policy.js';
import type { Journal, TxContext } from '../journal/journal.js';
import { RECOVERY, countsAsResumption } from '../state-machine/recovery.js';
import { decideFailure } from '../state-machine/failure.js';
import { downloadMember } from '../staging/stage.js';
import type { TargetFetcher } from '../staging/fetcher.js';
import { assertAssignment, type Assignment, type LegacyAssignment, type SignedAssignment } from './assignment.js';
import type { PlannedMember } from './members.js';
import { Outbox } from './outbox.js';
import { memberRecord, type DesiredState, type DeviceIdentity, type MemberRecord } from './receipt.js';
import { verifyAssignment } from './verify.js';
import { writeTerminalReport } from './report.js';
import { legacyDesiredState } from './legacy.js';
import { activateGroup, putMember, rollBack, type ActivationEnv } from './activation.js';

/** Named points of the sequence; crash tests kill the process at each one. */
export type Step =
  | 'after-desired-state-persisted'
  | 'after-download'
  | 'after-stage'
  | `mid-activation-${number}`
  | `after-health-${number}`
  | 'before-receipt'
  | 'after-receipt-before-upload';

export interface OrchestratorDeps {
  dataDir: string;
  journal: Journal;
  /** null: no spec 2.2 settings; release pointers fail closed. */
  release: { settings: ReleaseSettings; trustedKeys: PublicKey[] } | null;
  fetcher: TargetFetcher;
  drivers: DriverRegistry;
  device: DeviceIdentity & { key: PrivateKey };
  health?: HealthChecker;
  now?: () => Date;
  maxResumptions?: number;
  log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
  onStep?: (step: Step, tx: string) => void | Promise<void>;
  freeBytes?: (dir: string) => Promise<number>;
}

export type Outcome =
  | { status: 'refused'; code: string; reason: string }
  | { status: 'waiting'; missing: string[] }
  | { status: 'retry-later'; tx: string; code: string; reason: string }
  | { status: 'rebooting'; tx: string }
  | { status: 'done'; tx: string; kind: 'signed' | 'legacy'; activation: string; health: string; outboxFile: string };

/**
 * Runs one assignment through the state machine (spec 3.4): verify, wait for the complete
 * member set, persist desired state, download and stage all, activate group by group with
 * health checks, roll back in reverse on failure, persist the signed receipt. Every state
 * change is journaled before it is acted on, so `resume()` can finish after a crash.
 */
export class Orchestrator {
  readonly outbox: Outbox;
  private readonly d: OrchestratorDeps;
  private readonly now: () => Date;
  private readonly env: ActivationEnv;

  constructor(deps: OrchestratorDeps) {
    this.d = deps;
    this.env = { journal: deps.journal, driver: (m) => this.driver(m), step: (s, tx) => this.step(s, tx) };
    this.now = deps.now ?? (() => new Date());
    this.outbox = new Outbox(join(deps.dataDir, 'outbox'));
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
    // spec 3.5: the verified desired state is durable before anything is applied
    try {
      await this.d.journal.begin(tx, { desired });
    } catch (e) {
      return { status: 'retry-later', tx, code: isAgentError(e) ? e.code : 'UNEXPECTED', reason: (e as Error).message };
    }
    await this.step('after-desired-state-persisted', tx);
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
    {
      if (countsAsResumption(ctx.state)) {
        const n = await this.d.journal.resumed(ctx.tx);
        // Loop guard: a transaction that keeps crashing the agent is failed, not retried forever.
        if (n > (this.d.maxResumptions ?? 3)) {
          this.log('error', 'loop guard: failing transaction', { tx: ctx.tx, resumptions: n, state: ctx.state });
          await this.fail(ctx, new AgentError('LOOP_GUARD', `transaction ${ctx.tx} interrupted ${n} times`, { field: 'tx' }), false);
          return this.drive(ctx.tx);
        }
        if (RECOVERY[ctx.state] === 'rollback-then-retry') {
          // spec 3.4: an interrupted activation is rolled back conservatively before any retry
          this.log('warn', 'interrupted activation: rolling back before retry', { tx: ctx.tx, state: ctx.state });
          await this.d.journal.transition(ctx.tx, 'failure', { retry: true, failure: { code: 'INTERRUPTED', message: `interrupted in ${ctx.state}` } });
        }
      }
      return this.drive(ctx.tx);
    }
  }

  /** The channel uploaded the receipt: close the transaction and drop the outbox copy. */
  async markReported(tx: string): Promise<void> {
    const ctx = this.d.journal.get(tx);
    if (ctx?.state !== 'receipt-persisted') return;
    await this.d.journal.transition(tx, 'uploaded');
    const kind = (ctx.data.desired as DesiredState).kind === 'legacy' ? 'legacy-status' : 'receipt';
    await this.outbox.remove(tx, kind);
  }

  private async desiredSigned(a: SignedAssignment): Promise<DesiredState | Outcome> {
    if (this.d.release === null) {
      // spec 2.2.2: without the release settings a release pointer fails closed
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

  /** The state loop: one table-driven step at a time until a stopping point. */
  private async drive(tx: string): Promise<Outcome> {
    for (;;) {
      const ctx = this.d.journal.get(tx)!;
      try {
        const stop = await this.advance(ctx);
        if (stop !== null) return stop;
      } catch (err) {
        const decision = decideFailure(ctx.state, err);
        const code = isAgentError(err) ? err.code : 'UNEXPECTED';
        this.log('warn', `transaction ${tx} failed in ${ctx.state}: ${(err as Error).message}`, { code, decision });
        try {
          if (decision === 'retry-later') return { status: 'retry-later', tx, code, reason: (err as Error).message };
          await this.fail(ctx, err, decision === 'rollback');
        } catch (journalErr) {
          // Cannot even record the failure: stop here; resume() starts from the last durable state.
          return { status: 'retry-later', tx, code: 'JOURNAL_WRITE_FAILED', reason: (journalErr as Error).message };
        }
      }
    }
  }

  private async fail(ctx: TxContext, err: unknown, rollback: boolean): Promise<void> {
    const failure = { code: isAgentError(err) ? err.code : 'UNEXPECTED', message: (err as Error).message, component: isAgentError(err) ? (err.field ?? null) : null };
    // A journal write that failed mid-activation says nothing about the release: treat it like
    // a crash (roll back, then retry), a bounded number of times.
    const retry = isAgentError(err, 'JOURNAL_WRITE_FAILED') && Number(ctx.data.retries ?? 0) < (this.d.maxResumptions ?? 3);
    const data = { failure, retry, ...(isAgentError(err, 'HEALTH_FAILED') ? { health_verdict: 'unhealthy' } : {}) };
    if (rollback || ['activating', 'group-activated', 'group-healthy', 'awaiting-reboot', 'committing'].includes(ctx.state)) {
      await this.d.journal.transition(ctx.tx, 'failure', data);
    } else {
      await this.d.journal.transition(ctx.tx, 'fatal', data);
    }
  }

  private async advance(ctx: TxContext): Promise<Outcome | null> {
    const j = this.d.journal;
    const desired = ctx.data.desired as DesiredState;
    const members = desired.members;
    const groups = Math.max(...members.map((m) => m.group)) + 1;
    const staging = join(this.d.dataDir, 'staging', encodeURIComponent(ctx.tx));
    switch (ctx.state) {
      case 'desired-persisted':
        // What is live before anything changes: every member's previous digest, attempted or not.
        for (const m of members) await this.putMember(ctx.tx, m, { previous_digest: await this.driver(m).currentDigest(m) });
        await j.transition(ctx.tx, 'download-started');
        return null;
      case 'downloading':
        // spec 3.4: every payload is downloaded before any activation
        for (const m of members) await downloadMember(m, { fetcher: this.d.fetcher, dir: staging, ...(this.d.freeBytes ? { freeBytes: this.d.freeBytes } : {}) });
        await j.transition(ctx.tx, 'downloaded');
        await this.step('after-download', ctx.tx);
        return null;
      case 'downloaded': {
        for (const m of members) {
          const facts = (await this.driver(m).stage(m, join(staging, `${m.component}.staged`))) ?? {};
          await this.putMember(ctx.tx, m, { facts: { ...memberRecord(j.get(ctx.tx)!.data, m.component).facts, ...facts } });
        }
        await j.transition(ctx.tx, 'staged');
        await this.step('after-stage', ctx.tx);
        return null;
      }
      case 'staged':
        await j.transition(ctx.tx, 'activate-group', { group: 0 });
        return null;
      case 'activating':
        return activateGroup(this.env, ctx, members);
      case 'group-activated': {
        const g = ctx.data.group as number;
        const policy = parseHealthPolicy(desired.health ?? { probes: [] });
        const active = new Set(members.filter((m) => m.group <= g).map((m) => m.component));
        const result = await (this.d.health ?? probeHealthChecker).check(policy, active);
        if (result.verdict !== 'healthy') {
          const bad = result.results.filter((r) => !r.ok).map((r) => `${r.name} (${r.detail})`);
          throw new AgentError('HEALTH_FAILED', `group ${g} unhealthy: ${bad.join(', ')}`, { field: `health.probes.${result.results.find((r) => !r.ok)?.name}` });
        }
        await j.transition(ctx.tx, 'group-healthy', { [`health:${g}`]: result.results, health_verdict: result.results.length > 0 ? 'healthy' : (ctx.data.health_verdict ?? 'not-checked') });
        await this.step(`after-health-${g}`, ctx.tx);
        return null;
      }
      case 'group-healthy': {
        const g = ctx.data.group as number;
        if (g + 1 < groups) await j.transition(ctx.tx, 'next-group', { group: g + 1 });
        else await j.transition(ctx.tx, 'all-healthy');
        return null;
      }
      case 'awaiting-reboot': {
        const m = members.find((x) => x.group === ctx.data.group)!;
        const rec = memberRecord(ctx.data, m.component);
        const driver = this.driver(m);
        if (driver.confirmReboot === undefined) throw new AgentError('ACTIVATION_FAILED', `${m.kind} cannot confirm a reboot`);
        const r = await driver.confirmReboot(m, rec.facts);
        await this.putMember(ctx.tx, m, { facts: { ...rec.facts, ...r.facts } });
        if (!r.ok) throw new AgentError('SLOT_MISMATCH', `booted slot ${r.facts.booted_slot}, installed ${rec.facts.installed_slot}`, { field: 'booted_slot' });
        await j.transition(ctx.tx, 'rebooted');
        return null;
      }
      case 'committing': {
        for (const m of members) {
          const rec = memberRecord(j.get(ctx.tx)!.data, m.component);
          const facts = (await this.driver(m).commit(m, rec.facts)) ?? {};
          await this.putMember(ctx.tx, m, { verdict: 'committed', resulting_digest: m.digest, facts: { ...rec.facts, ...facts } });
        }
        await j.transition(ctx.tx, 'committed', { activation: 'activated' });
        return null;
      }
      case 'rolling-back':
        return rollBack(this.env, ctx, members);
      case 'committed':
      case 'rolled-back':
      case 'failed':
        await this.step('before-receipt', ctx.tx);
        await writeTerminalReport(ctx, { journal: j, outbox: this.outbox, device: this.d.device, now: this.now() });
        await this.step('after-receipt-before-upload', ctx.tx);
        return null;
      case 'receipt-persisted':
      case 'reported': {
        const reboot = members.some((m) => memberRecord(ctx.data, m.component).facts.reboot === true) && ctx.data.rebooted_after_rollback !== true;
        if (reboot && ctx.state === 'receipt-persisted') {
          // os-bundle fell back to the previous slot: the receipt is safe, now boot it.
          await j.note(ctx.tx, { rebooted_after_rollback: true });
          await this.driver(members[0]!).reboot?.();
        }
        const kind = desired.kind === 'legacy' ? 'legacy-status' : 'receipt';
        return {
          status: 'done',
          tx: ctx.tx,
          kind: desired.kind,
          activation: String(ctx.data.activation),
          health: String(ctx.data.health_verdict ?? 'not-checked'),
          outboxFile: this.outbox.fileOf(ctx.tx, kind),
        };
      }
    }
  }

  private async putMember(tx: string, m: PlannedMember, patch: Partial<MemberRecord>): Promise<void> {
    await putMember(this.d.journal, tx, m, patch);
  }

  private driver(m: PlannedMember): MemberDriver {
    const d = this.d.drivers[m.kind];
    if (d === undefined) throw new AgentError('MEMBER_KIND_UNSUPPORTED', `no driver for ${m.kind}`, { field: `components.${m.component}.kind` });
    return d;
  }

  private async step(step: Step, tx: string): Promise<void> {
    await this.d.onStep?.(step, tx);
  }

  private log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void {
    this.d.log?.(level, msg, fields);
  }
}
