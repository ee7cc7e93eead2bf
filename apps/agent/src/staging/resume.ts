import { rm, stat, truncate } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentError, isAgentError } from '../errors.js';
import type { DownloadProgress, DownloadTarget } from '../journal/tx-data.js';
import type { FetchProgress } from './fetcher.js';

/**
 * How downloads resume (docs/agent.md "Downloads"). A download's file is fsynced and its
 * offset journaled every `checkpointBytes` and where a broken stream stopped; the next attempt,
 * in this process after a dropped link or in the next one after a kill or reboot, asks the
 * server for the rest (GetFile from that offset). Attempts that move no byte are retried after
 * a backoff (`backoffBaseMs` doubling to `backoffMaxMs`, drawn from the upper half of each
 * step) up to the agent's `SVC_AGENT_DOWNLOAD_ATTEMPTS` in a row, then the transaction fails
 * with DOWNLOAD_RETRIES_EXHAUSTED; any progress starts the count again.
 */
export const DOWNLOAD = Object.freeze({
  checkpointBytes: 1024 * 1024,
  backoffBaseMs: 1000,
  backoffMaxMs: 300_000,
  /** Default of SVC_AGENT_DOWNLOAD_ATTEMPTS: attempts in a row without progress before failing. */
  defaultAttempts: 10,
  /** A failed attempt's message kept in the journal and the delivery report, in characters. */
  errorChars: 200,
});

/** Where a download's progress is kept between attempts and restarts (the journal). */
export interface ProgressStore {
  load(target: DownloadTarget): DownloadProgress | undefined;
  save(progress: DownloadProgress): Promise<void>;
  /** Attempts in a row without progress before the download fails (>= 1). */
  maxStalled: number;
  /** Test seam: the wait before attempt `n` after `stalled` attempts without progress. */
  backoffMs?: (stalled: number) => number;
  sleep?: (ms: number) => Promise<void>;
  log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/** The retry backoff after `stalled` attempts in a row without progress. */
export function downloadBackoffMs(stalled: number, random: () => number = Math.random): number {
  const base = Math.min(DOWNLOAD.backoffMaxMs, DOWNLOAD.backoffBaseMs * 2 ** Math.min(Math.max(stalled - 1, 0), 20));
  return Math.round(base / 2 + random() * (base / 2));
}

async function sizeOf(path: string): Promise<number> {
  return stat(path).then(
    (s) => s.size,
    () => 0,
  );
}

/**
 * A failure that is not the link's, left to the transaction: bytes that differ from the signed
 * metadata, a full disk, a journal that cannot be written, a local file error (errno).
 */
function final(err: unknown): boolean {
  if (isAgentError(err)) return err.code !== 'FETCH_FAILED';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code);
}

function words(err: unknown): string {
  return ((err as Error).message ?? String(err)).slice(0, DOWNLOAD.errorChars);
}

export type Attempt<T> = (from: number, progress: FetchProgress) => Promise<T>;

/**
 * Runs `attempt` until it completes: each attempt continues `file` from the journaled offset
 * (the file is cut back to it: bytes past the last fsync may not have survived a power cut).
 * Without a store the file's own size is the offset and one attempt is made, as before
 * downloads were journaled. Resolves with the attempt's result and the final progress.
 */
export async function resumable<T>(
  file: string,
  target: DownloadTarget,
  store: ProgressStore | undefined,
  attempt: Attempt<T>,
  field?: string,
): Promise<{ result: T; progress: DownloadProgress }> {
  const fresh: DownloadProgress = { target, offset: 0, attempts: 0, stalled: 0, resumes: 0, received: 0 };
  if (store === undefined) {
    const from = await sizeOf(file);
    const result = await attempt(from, { checkpoint: async () => undefined });
    const end = await sizeOf(file);
    return { result, progress: { ...fresh, offset: end, attempts: 1, resumes: from > 0 ? 1 : 0, received: Math.max(0, end - from) } };
  }
  let p: DownloadProgress = store.load(target) ?? fresh;
  for (;;) {
    const size = await sizeOf(file);
    const from = Math.min(p.offset, size);
    if (size > from) {
      // beyond the journaled offset nothing is known to be durable
      if (from === 0) await rm(file, { force: true });
      else await truncate(file, from);
    }
    p = { ...p, offset: from, attempts: p.attempts + 1, resumes: p.resumes + (from > 0 ? 1 : 0) };
    await store.save(p);
    if (from > 0) store.log?.('info', 'download resumed', { target, from, attempt: p.attempts });
    const start = from;
    const progress: FetchProgress = {
      checkpoint: async (at) => {
        if (at <= p.offset) return;
        p = { ...p, received: p.received + (at - p.offset), offset: at, stalled: 0 };
        await store.save(p);
      },
    };
    try {
      const result = await attempt(from, progress);
      const end = await sizeOf(file);
      p = { ...p, received: p.received + Math.max(0, end - p.offset), offset: end, stalled: 0 };
      return { result, progress: p };
    } catch (err) {
      if (final(err)) throw err;
      const moved = p.offset > start;
      p = { ...p, stalled: moved ? 0 : p.stalled + 1, last_error: words(err) };
      await store.save(p);
      if (p.stalled >= store.maxStalled) {
        throw new AgentError(
          'DOWNLOAD_RETRIES_EXHAUSTED',
          `${target} download: ${p.stalled} attempts in a row without progress (bound ${store.maxStalled}), ${p.offset} bytes kept; last: ${p.last_error}`,
          { cause: err, ...(field !== undefined ? { field } : {}) },
        );
      }
      const wait = (store.backoffMs ?? downloadBackoffMs)(p.stalled);
      store.log?.('warn', 'download interrupted, retrying', { target, offset: p.offset, stalled: p.stalled, retry_ms: wait, reason: p.last_error });
      await (store.sleep ?? ((ms: number) => sleep(ms)))(wait);
    }
  }
}
