import { status, type ServiceError } from '@grpc/grpc-js';

/**
 * When the agent calls next. Every wait is spread at random so that a fleet that was started,
 * refused or cut off together does not come back together:
 * - a check-in after a successful one waits the interval the server asked for, spread by
 *   `intervalJitter` either way (a fleet started at one moment drifts apart in a few turns);
 * - the first check-in after the agent starts waits a random part of the last interval the
 *   server asked for (a power cut or a host-wide restart brings every device up at once);
 * - a failed check-in backs off exponentially (1-2 s, 2-4 s, ... at most 5 min), each wait
 *   drawn from the upper half of its step;
 * - a server that refused the call for load (RESOURCE_EXHAUSTED with `retry-after-ms`) is left
 *   alone at least that long, plus up to `retryAfterJitter` of it again, so the refused devices
 *   spread over half the wait instead of all returning at its end.
 * `random` is injectable: tests and the simulator seed it (`seededRandom`).
 */
export const SCHEDULE = Object.freeze({
  intervalJitter: 0.1,
  retryAfterJitter: 0.5,
  backoffBaseMs: 1000,
  backoffMaxMs: 300_000,
  /** A retry-after above this is read as this (a server cannot park a device for a day). */
  retryAfterMaxMs: 3_600_000,
  /** The first check-in after start spreads over at most this much. */
  firstSpreadMaxS: 3600,
});

/** The trailer a busy server sends with RESOURCE_EXHAUSTED: milliseconds, decimal. */
export const RETRY_AFTER_MS = 'retry-after-ms';

/** mulberry32: a small deterministic generator in [0, 1) for seeded tests and simulations. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Exponential backoff for the `attempt`th failure in a row: 1-2 s, 2-4 s, ... up to 2.5-5 min. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(SCHEDULE.backoffMaxMs, SCHEDULE.backoffBaseMs * 2 ** Math.min(attempt, 9));
  return Math.round(base / 2 + random() * (base / 2));
}

/** The wait a RESOURCE_EXHAUSTED refusal asks for, when it carries a well-formed `retry-after-ms`. */
export function retryAfterMs(err: unknown): number | undefined {
  const e = err as ServiceError | undefined;
  if (e?.code !== status.RESOURCE_EXHAUSTED) return undefined;
  const raw = e.metadata?.get(RETRY_AFTER_MS)[0]?.toString();
  if (raw === undefined || !/^\d{1,10}$/.test(raw)) return undefined;
  return Math.min(Number(raw), SCHEDULE.retryAfterMaxMs);
}

export class CheckInSchedule {
  constructor(private readonly random: () => number = Math.random) {}

  /** Before the first check-in after start: uniformly in [0, lastIntervalS) seconds (0 when never told one). */
  firstMs(lastIntervalS: number | undefined): number {
    const spread = Math.min(lastIntervalS ?? 0, SCHEDULE.firstSpreadMaxS) * 1000;
    return Math.floor(this.random() * spread);
  }

  /** After a successful check-in: the interval, spread by SCHEDULE.intervalJitter either way. */
  nextMs(intervalS: number): number {
    const j = SCHEDULE.intervalJitter;
    return Math.round(intervalS * 1000 * (1 - j + 2 * j * this.random()));
  }

  /** After the `attempt`th failure in a row: the backoff, and at least what the server asked for, spread. */
  failureMs(attempt: number, err: unknown): { waitMs: number; retryAfterMs?: number } {
    const backoff = backoffMs(attempt, this.random);
    const asked = retryAfterMs(err);
    if (asked === undefined) return { waitMs: backoff };
    const spread = Math.round(asked * (1 + SCHEDULE.retryAfterJitter * this.random()));
    return { waitMs: Math.max(backoff, spread), retryAfterMs: asked };
  }
}
