import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { markStaleDevicesOffline } from '../store/devices.js';

/**
 * Marks online devices offline when their last heartbeat is older than `staleAfterMs`.
 * One idempotent UPDATE: several server processes may run it at once without a lease,
 * and the counts triggers keep `device_counts` right.
 */
export interface Job {
  stop(): Promise<void>;
}

export function startOfflineDetector(db: Kysely<Database>, now: () => Date, opts: { intervalMs?: number; staleAfterMs?: number; onError?: (e: unknown) => void } = {}): Job {
  const interval = opts.intervalMs ?? 30_000;
  const staleAfter = opts.staleAfterMs ?? 90_000;
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = markStaleDevicesOffline(db, new Date(now().getTime() - staleAfter))
      .then(() => undefined)
      .catch((e) => opts.onError?.(e))
      .finally(() => {
        running = undefined;
      });
  }, interval);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
