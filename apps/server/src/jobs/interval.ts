/**
 * A periodic job that never overlaps itself and stops cleanly. Jobs must be idempotent or
 * leased through the database: every server process runs them.
 */
export interface Job {
  stop(): Promise<void>;
}

export function startInterval(task: () => Promise<unknown>, intervalMs: number, onError: (e: unknown) => void): Job {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = task()
      .then(() => undefined)
      .catch(onError)
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
