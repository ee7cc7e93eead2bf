import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { markStaleDevicesOffline } from '../resources/devices/queries/presence.js';
import { startInterval, type Job } from './interval.js';

export type { Job } from './interval.js';

/**
 * Marks online devices offline when their last heartbeat is older than `staleAfterMs`.
 * One idempotent UPDATE over every tenant: several server processes may run it at once
 * without a lease, and the counts triggers keep `device_counts` right. A single statement
 * is atomic on its own and the flip is not audited (the next heartbeat flips it back), so it
 * is a query, not a command in a unit of work (which is scoped to one tenant).
 */
export function startOfflineDetector(
  db: Kysely<Database>,
  now: () => Date,
  opts: { intervalMs?: number; staleAfterMs?: number; onError?: (e: unknown) => void } = {},
): Job {
  const staleAfter = opts.staleAfterMs ?? 90_000;
  return startInterval(() => markStaleDevicesOffline(db, new Date(now().getTime() - staleAfter)), opts.intervalMs ?? 30_000, opts.onError ?? (() => {}));
}
