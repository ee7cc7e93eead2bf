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
