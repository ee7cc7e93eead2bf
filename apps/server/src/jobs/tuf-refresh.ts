import type { SigningRepository } from '../signing-repo/repository.js';
import { startInterval, type Job } from './interval.js';

/**
 * Re-signs TUF timestamps (and snapshot/targets near expiry) before they expire, for every
 * tenant. Without it a timestamp expires after a day and devices refuse the repository as
 * frozen. Safe in every server process: due-ness is decided again under the tenant's row
 * lock, so two processes never both re-sign (signing-repo/refresh.ts).
 */
export function startTufRefresh(
  repo: Pick<SigningRepository, 'refreshAllDue'>,
  now: () => Date,
  opts: { intervalMs?: number; onError?: (e: unknown) => void } = {},
): Job {
  const onError = opts.onError ?? (() => {});
  return startInterval(
    async () => {
      const { failures } = await repo.refreshAllDue(now());
      for (const f of failures) onError(f.error);
    },
    // The timestamp's refresh margin is 12 hours; checking every 10 minutes leaves ample room.
    opts.intervalMs ?? 10 * 60_000,
    onError,
  );
}
