/**
 * State derivation for deployments (release transactions and legacy rollouts).
 *
 * Device states come only from accepted evidence: a signed receipt (spec §2.3 rule 5) for signed
 * work, a device report for legacy work (spec §2.3 rule 6: legacy status stays device-reported).
 * The displayed transaction state (spec §3: running, committed, rolled back, failed) is a pure
 * function of those device states and whether the deployment was aborted.
 */

/**
 * Per-device state of one deployment. `pending` = no terminal evidence yet. `skipped` = the
 * device was decommissioned while pending: it owes nothing any more, and its result is neither
 * a success nor a failure (it never counts against the failure threshold).
 */
export type DeviceState = 'pending' | 'committed' | 'rolled back' | 'failed' | 'installed' | 'skipped';
export type TransactionState = 'running' | 'committed' | 'rolled back' | 'failed';
export type RolloutStatus = 'running' | 'awaiting_approval' | 'paused' | 'completed' | 'aborted';
export type WaveState = 'pending' | 'awaiting_approval' | 'open' | 'paused' | 'done';

/** contracts §3: receipt `activation` -> the device's terminal state. */
export function deviceStateFromActivation(activation: string): Exclude<DeviceState, 'pending'> {
  switch (activation) {
    case 'activated':
      return 'committed';
    case 'rolled-back':
      return 'rolled back';
    default:
      // anything else the schema admits ("failed") is a failure; unknown values never count as success
      return 'failed';
  }
}

/** Legacy reports: `installed` is success, `failed` is failure; both stay labelled device-reported. */
export function deviceStateFromLegacy(status: 'installed' | 'failed'): Exclude<DeviceState, 'pending'> {
  return status === 'installed' ? 'installed' : 'failed';
}

export function isFailure(s: DeviceState): boolean {
  return s === 'failed' || s === 'rolled back';
}

export function isTerminal(s: DeviceState): boolean {
  return s !== 'pending';
}

export interface StateCounts {
  pending: number;
  committed: number;
  'rolled back': number;
  failed: number;
  installed: number;
  skipped: number;
}

export function emptyCounts(): StateCounts {
  return { pending: 0, committed: 0, 'rolled back': 0, failed: 0, installed: 0, skipped: 0 };
}

/**
 * Displayed transaction state. A failure on any device is final for the transaction (it can
 * no longer commit fleet-wide), so `failed` wins at once. Otherwise the transaction runs while
 * devices still owe a receipt - unless it was aborted, which releases pending devices. Once
 * nothing is pending: `committed` when every device still in service (not `skipped`)
 * committed, else `rolled back`.
 */
export function transactionState(c: StateCounts, aborted: boolean): TransactionState {
  if (c.failed > 0) return 'failed';
  if (c.pending > 0 && !aborted) return 'running';
  if (c['rolled back'] > 0) return 'rolled back';
  const succeeded = c.committed + c.installed;
  // an abort before any device reported leaves nothing committed: the deployment failed its goal
  if (succeeded === 0) return 'failed';
  return c.pending > 0 ? 'failed' : 'committed';
}

export interface WaveProgress {
  index: number;
  size: number;
  state: WaveState;
  done: number; // terminal devices (success or failure)
  failed: number;
}

/** Rollout status from its waves and the abort flag (stored per wave; derived here for display). */
export function rolloutStatus(waves: WaveProgress[], aborted: boolean): RolloutStatus {
  if (aborted) return 'aborted';
  if (waves.some((w) => w.state === 'paused')) return 'paused';
  if (waves.some((w) => w.state === 'awaiting_approval')) return 'awaiting_approval';
  if (waves.every((w) => w.state === 'done')) return 'completed';
  return 'running';
}
