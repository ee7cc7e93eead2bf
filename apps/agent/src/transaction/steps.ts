import { join } from 'node:path';
import { AgentError } from '../errors.js';
import type { Digest, MemberDelivery } from '@svc/release-core';
import { deliveryKey, downloadKey, memberRecord, type PlannedMember, type TxFacts } from '../journal/tx-data.js';
import { classifyFailure } from '../state-machine/failure.js';
import { DOWNLOAD, type ProgressStore } from '../staging/resume.js';
import { isAgentError } from '../errors.js';
import { crashPoint } from '../state-machine/crash-points.js';
import type { State } from '../state-machine/states.js';
import { deliverMember } from '../staging/delta.js';
import { activateGroup, checkGroupHealth, commitAll, confirmReboot, nextGroup, rollBack } from './activation.js';
import { writeTerminalReport } from './report.js';
import { currentRecord, putMember, stagingDir, type Step, type StepEnv } from './step-env.js';

/** desired-persisted: what is live before anything changes, every member, attempted or not. */
const recordPrevious: Step = async (ctx, env) => {
  for (const m of ctx.data.desired.members) await putMember(env, ctx.tx, m, { previous_digest: await env.driver(m).currentDigest(m) });
  crashPoint('previous-digests-recorded', ctx.tx);
  await env.journal.transition(ctx.tx, 'download-started');
  return null;
};

/** A member's download progress in the journal: resumed from there, retried within the bound. */
function progressStore(ctx: { tx: string }, env: StepEnv, m: PlannedMember): ProgressStore {
  return {
    load: (target) => env.journal.get(ctx.tx)!.data[downloadKey(m.component, target)],
    save: async (p) => {
      const facts: TxFacts = {};
      facts[downloadKey(m.component, p.target)] = p;
      await env.journal.note(ctx.tx, facts);
    },
    maxStalled: env.downloadAttempts,
    ...(env.downloadBackoffMs ? { backoffMs: env.downloadBackoffMs } : {}),
    ...(env.log ? { log: env.log } : {}),
  };
}

/**
 * The delivery of a member whose download failed the transaction, from its journaled
 * progress: the delivery report says how far it got and why (docs/delta-updates.md).
 */
function failedDelivery(ctx: { tx: string }, env: StepEnv, m: PlannedMember, source: Digest | null, err: unknown): MemberDelivery {
  const data = env.journal.get(ctx.tx)!.data;
  const full = data[downloadKey(m.component, 'full')];
  // a delta looked up but not offered moved no byte and is not part of the story
  const tried = data[downloadKey(m.component, 'delta')];
  const delta = tried !== undefined && (tried.received > 0 || tried.last_error !== undefined) ? tried : undefined;
  const viaDelta = full === undefined && delta !== undefined && source !== null;
  return {
    component: m.component,
    method: viaDelta ? 'delta' : 'full',
    bytes_transferred: (full?.received ?? 0) + (delta?.received ?? 0),
    full_length: m.length,
    ...(viaDelta && source !== null ? { source_digest: source } : {}),
    attempts: Math.max(1, (full?.attempts ?? 0) + (delta?.attempts ?? 0)),
    resumes: (full?.resumes ?? 0) + (delta?.resumes ?? 0),
    failure: isAgentError(err) ? err.code : 'UNEXPECTED',
    failure_detail: ((err as Error).message ?? String(err)).slice(0, DOWNLOAD.errorChars),
  };
}

/** downloading: spec §3 rule 4, every payload is downloaded before any activation. */
const downloadAll: Step = async (ctx, env) => {
  const dir = stagingDir(env, ctx.tx);
  for (const m of ctx.data.desired.members) {
    // a member downloaded before a crash keeps the delivery it journaled
    const recorded = env.journal.get(ctx.tx)!.data[deliveryKey(m.component)];
    if (recorded !== undefined && recorded.failure === undefined) continue;
    const previous = currentRecord(env, ctx.tx, m).previous_digest;
    const livePath = previous === null ? null : await env.driver(m).deltaSource?.(m);
    const facts: TxFacts = {};
    try {
      facts[deliveryKey(m.component)] = await deliverMember(m, {
        fetcher: env.fetcher,
        dir,
        ...(env.freeBytes ? { freeBytes: env.freeBytes } : {}),
        source: previous !== null && livePath ? { digest: previous, path: livePath } : null,
        progress: progressStore(ctx, env, m),
        ...(env.log ? { log: env.log } : {}),
      });
    } catch (err) {
      // a failure that ends the transaction is reported beside its receipt; one retried later is not
      if (classifyFailure(err) === 'fatal') {
        facts[deliveryKey(m.component)] = failedDelivery(ctx, env, m, previous !== null && livePath ? previous : null, err);
        await env.journal.note(ctx.tx, facts);
      }
      throw err;
    }
    await env.journal.note(ctx.tx, facts);
  }
  await env.journal.transition(ctx.tx, 'downloaded');
  crashPoint('after-download', ctx.tx);
  return null;
};

/** downloaded: every member staged (nothing live changes). */
const stageAll: Step = async (ctx, env) => {
  const dir = stagingDir(env, ctx.tx);
  for (const m of ctx.data.desired.members) {
    const facts = (await env.driver(m).stage(m, join(dir, `${m.component}.staged`))) ?? {};
    await putMember(env, ctx.tx, m, { facts: { ...currentRecord(env, ctx.tx, m).facts, ...facts } });
  }
  await env.journal.transition(ctx.tx, 'staged');
  crashPoint('after-stage', ctx.tx);
  return null;
};

/** staged: activation starts with the first group. */
const startActivation: Step = async (ctx, env) => {
  await env.journal.transition(ctx.tx, 'activate-group', { group: 0 });
  return null;
};

/** committed, rolled-back, failed: spec §2.3 rule 1, the signed receipt is persisted before anything is reported. */
const writeReceipt: Step = async (ctx, env) => {
  crashPoint('before-receipt', ctx.tx);
  await writeTerminalReport(ctx, { journal: env.journal, outbox: env.outbox, device: env.device, now: env.now() });
  crashPoint('after-receipt-before-upload', ctx.tx);
  return null;
};

/** receipt-persisted, reported: done; an os-bundle that fell back boots the previous slot now. */
const finished: Step = async (ctx, env) => {
  const { desired } = ctx.data;
  const reboot = desired.members.some((m) => memberRecord(ctx.data, m.component).facts.reboot === true) && ctx.data.rebooted_after_rollback !== true;
  if (reboot && ctx.state === 'receipt-persisted') {
    // The receipt is safe in the outbox: now boot the restored slot.
    await env.journal.note(ctx.tx, { rebooted_after_rollback: true });
    await env.driver(desired.members[0]!).reboot?.();
  }
  const activation = ctx.data.activation;
  if (activation === undefined)
    throw new AgentError('JOURNAL_CORRUPT', `transaction ${ctx.tx} in ${ctx.state} has no activation outcome`, { field: 'data.activation' });
  return {
    status: 'done',
    tx: ctx.tx,
    kind: desired.kind,
    activation,
    health: ctx.data.health_verdict ?? 'not-checked',
    outboxFile: env.outbox.fileOf(ctx.tx, desired.kind === 'legacy' ? 'legacy-status' : 'receipt'),
  };
};

/** The state loop's table: one handler per persisted state, nothing else decides what runs. */
export const STEPS: Readonly<Record<State, Step>> = {
  'desired-persisted': recordPrevious,
  downloading: downloadAll,
  downloaded: stageAll,
  staged: startActivation,
  activating: activateGroup,
  'group-activated': checkGroupHealth,
  'group-healthy': nextGroup,
  'awaiting-reboot': confirmReboot,
  committing: commitAll,
  'rolling-back': rollBack,
  committed: writeReceipt,
  'rolled-back': writeReceipt,
  failed: writeReceipt,
  'receipt-persisted': finished,
  reported: finished,
};
