import type { State } from './states.js';

/**
 * Where to resume when the agent finds a transaction a crash interrupted. Conservative
 * (spec 3.4): an interrupted activation is always rolled back before any retry; nothing is
 * assumed about a half-applied member.
 */
export type ResumeAction =
  | 'download' // nothing activated yet: resume downloads (partial files keep their offset)
  | 'stage' // downloads complete: stage again (idempotent), then activate
  | 'activate' // staged, nothing activated: activate from the first group
  | 'rollback-then-retry' // activation was interrupted: restore attempted members, then activate again
  | 'confirm-reboot' // os-bundle: see which slot booted, then health-check or record the fallback
  | 'finish-commit' // every group was healthy: committing is idempotent
  | 'finish-rollback' // restoring is idempotent: finish it
  | 'write-receipt' // terminal outcome known: (re)write the receipt
  | 'none'; // receipt persisted or reported: the channel owns the upload

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
  const action = RECOVERY[state];
  return action !== 'none' && action !== 'write-receipt';
}
