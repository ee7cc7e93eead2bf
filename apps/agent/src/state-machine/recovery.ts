import type { State } from './states.js';

/**
 * What a restart does with a transaction a crash interrupted. Conservative (spec §3 rule 4):
 * an interrupted activation is always rolled back before any retry; nothing is assumed about
 * a half-applied member. `Orchestrator.resume()` dispatches on this table.
 */
export type ResumeAction =
  'download' | 'stage' | 'activate' | 'rollback-then-retry' | 'confirm-reboot' | 'finish-commit' | 'finish-rollback' | 'write-receipt' | 'none';

export interface ResumeActionSpec {
  /** Resuming consumes one slot of the loop guard (`maxResumptions`). */
  countsAsResumption: boolean;
  /** What the agent does, in one sentence (docs/agent.md lists it per crash point). */
  does: string;
}

export const RESUME_ACTIONS: Readonly<Record<ResumeAction, ResumeActionSpec>> = {
  download: { countsAsResumption: true, does: 'resumes the downloads; a partial file continues from its journaled offset' },
  stage: { countsAsResumption: true, does: 'stages every member again (idempotent), then activates' },
  activate: { countsAsResumption: true, does: 'activates from the first group' },
  'rollback-then-retry': { countsAsResumption: true, does: 'restores every attempted member in reverse order, then activates again from the first group' },
  'confirm-reboot': { countsAsResumption: true, does: 'asks the slot driver which slot booted: the new one is health-checked, a fallback is rolled back' },
  'finish-commit': { countsAsResumption: true, does: 'commits every member again (idempotent), then writes the receipt' },
  'finish-rollback': { countsAsResumption: true, does: 'restores the attempted members not yet restored, then writes the receipt' },
  'write-receipt': { countsAsResumption: false, does: 'writes (or rewrites) the signed receipt of the journaled outcome' },
  none: { countsAsResumption: false, does: 'redoes nothing: the receipt bytes in the outbox are uploaded as they are' },
};

export const RECOVERY: Readonly<Record<State, ResumeAction>> = {
  'desired-persisted': 'download',
  downloading: 'download',
  downloaded: 'stage',
  staged: 'activate',
  activating: 'rollback-then-retry',
  'group-activated': 'rollback-then-retry',
  'group-healthy': 'rollback-then-retry',
  'awaiting-reboot': 'confirm-reboot',
  committing: 'finish-commit',
  'rolling-back': 'finish-rollback',
  committed: 'write-receipt',
  'rolled-back': 'write-receipt',
  failed: 'write-receipt',
  'receipt-persisted': 'none',
  reported: 'none',
};

/** True when resuming from this state consumes a slot of the loop guard. */
export function countsAsResumption(state: State): boolean {
  return RESUME_ACTIONS[RECOVERY[state]].countsAsResumption;
}
