import { setTimeout as sleep } from 'node:timers/promises';
import { E2eError } from './errors.js';

/**
 * Polls `probe` until it returns a value other than undefined/false, or fails with
 * TIMEOUT naming `what` (and the last probe error, if any). Everything the harness waits
 * for is bounded this way: a hung process never hangs a test run.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new E2eError('TIMEOUT', `timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(everyMs);
  }
}

/** What a progress-bound probe answers: the result once there is one, else how far the work has come. */
export type Progress<T> = { done: T } | { progress: unknown };

/**
 * Polls `probe` until it answers `{ done }`. The wait is bound by progress, not by wall time:
 * it fails with TIMEOUT naming `what` only when `idleMs` pass without the probe's `progress`
 * changing (compared as JSON). A slow but advancing run (a busy machine, a large fleet) is
 * never cut short; a stalled one fails within `idleMs` of its last step.
 */
export async function waitForProgress<T>(what: string, probe: () => Promise<Progress<T>> | Progress<T>, idleMs = 30_000, everyMs = 250): Promise<T> {
  let last: string | undefined;
  let lastChange = Date.now();
  let lastError: unknown;
  for (;;) {
    try {
      const answer = await probe();
      if ('done' in answer) return answer.done;
      const now = JSON.stringify(answer.progress);
      if (now !== last) {
        last = now;
        lastChange = Date.now();
      }
    } catch (e) {
      lastError = e;
    }
    if (Date.now() - lastChange > idleMs) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new E2eError('TIMEOUT', `no progress for ${idleMs} ms waiting for ${what}; last progress: ${last ?? 'none'}${why}`);
    }
    await sleep(everyMs);
  }
}
