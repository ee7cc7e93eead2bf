/**
 * Wave progression as a pure function (evaluated when a receipt or legacy report arrives, and on
 * approve/resume): the stored wave rows go in, the rows to write come out. Keeping it pure lets
 * the database transaction that holds the deployment lock apply it without any process memory.
 */
import type { FailureThreshold } from '@svc/release-core';
import { thresholdExceeded } from './waves.js';
import type { WaveState } from './states.js';

export interface WaveRow {
  index: number;
  size: number;
  requires_approval: boolean;
  state: WaveState;
  done: number;
  failed: number;
  /** failures the operator accepted with `resume`; only failures beyond these count again */
  failures_acknowledged: number;
}

/** Initial states: the first wave opens unless it is gated; later waves wait. */
export function initialWaves(rows: Omit<WaveRow, 'state' | 'done' | 'failed' | 'failures_acknowledged'>[]): WaveRow[] {
  const waves: WaveRow[] = rows.map((r) => ({ ...r, state: 'pending', done: 0, failed: 0, failures_acknowledged: 0 }));
  return advance(openNext(waves), undefined);
}

function openNext(waves: WaveRow[]): WaveRow[] {
  const out = waves.map((w) => ({ ...w }));
  const next = out.find((w) => w.state === 'pending');
  if (next) next.state = next.requires_approval ? 'awaiting_approval' : 'open';
  return out;
}

/**
 * Apply the rules until nothing changes: an open wave over its failure threshold pauses
 * (spec §4 "failure threshold from the constraints"); an open wave whose devices are all
 * terminal is done and the next wave opens, or waits for approval when gated.
 */
export function advance(waves: WaveRow[], threshold: FailureThreshold | undefined): WaveRow[] {
  let cur = waves.map((w) => ({ ...w }));
  for (let guard = 0; guard <= cur.length + 1; guard++) {
    const open = cur.find((w) => w.state === 'open');
    if (!open) return cur;
    if (thresholdExceeded(threshold, open.failed - open.failures_acknowledged, open.size)) {
      open.state = 'paused';
      return cur;
    }
    if (open.done < open.size) return cur;
    open.state = 'done';
    cur = openNext(cur);
  }
  return cur;
}

/** `approve`: opens the first wave waiting for approval. Returns null when none waits. */
export function approve(waves: WaveRow[], threshold: FailureThreshold | undefined): WaveRow[] | null {
  const i = waves.findIndex((w) => w.state === 'awaiting_approval');
  if (i < 0) return null;
  const out = waves.map((w) => ({ ...w }));
  out[i]!.state = 'open';
  return advance(out, threshold);
}

/** `resume`: reopens a paused wave, accepting its failures so far. Returns null when none is paused. */
export function resume(waves: WaveRow[], threshold: FailureThreshold | undefined): WaveRow[] | null {
  const i = waves.findIndex((w) => w.state === 'paused');
  if (i < 0) return null;
  const out = waves.map((w) => ({ ...w }));
  out[i]!.state = 'open';
  out[i]!.failures_acknowledged = out[i]!.failed;
  return advance(out, threshold);
}

/** Record one device's terminal result in its wave, then advance. */
export function recordResult(waves: WaveRow[], waveIndex: number, failed: boolean, threshold: FailureThreshold | undefined): WaveRow[] {
  const out = waves.map((w) => ({ ...w }));
  const w = out.find((x) => x.index === waveIndex);
  if (w) {
    w.done += 1;
    if (failed) w.failed += 1;
  }
  return advance(out, threshold);
}
