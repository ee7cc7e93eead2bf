import type { ComponentCache, SimDevice, SimStats } from './device.js';

/** How often the fleet's schedule is scanned for devices whose turn has come. */
export const SCHEDULE_TICK_MS = 100;

/** When a set of devices takes its turns (the whole fleet's, or one thread's share of it). */
export interface TurnSchedule {
  /** Each device's position in the whole fleet: the first turns spread evenly over one interval across every thread. */
  positions: ArrayLike<number>;
  fleetSize: number;
  startAt: number;
  intervalMs: number;
  /** --jitter as a fraction. */
  jitter: number;
  /** Turns before this time are Pings (--ping-first). */
  pingUntil: number;
  /** Calls out at once from these devices at most (--max-in-flight, or a thread's share of it). */
  maxInFlight: number;
}

/**
 * The turns of a set of simulated devices. One timer for all of them rather than one per device:
 * each device's next turn is a slot in a Float64Array, scanned every SCHEDULE_TICK_MS (100k
 * comparisons, well under a millisecond). The first turns spread evenly over one interval, like
 * real devices that booted at random times; each next turn comes --interval +- --jitter percent
 * later.
 *
 * Calls in flight are bounded (`maxInFlight`). Without the bound 10k closed-loop devices keep ~10k
 * calls queued at the server; each waits queue/throughput seconds, beyond the 30 s deadline once
 * throughput < N/30 per second, and the server then spends its time on calls the device already
 * gave up on (measured: 8 useful pings/s at 1k devices on a loaded machine). With a window the
 * queue, hence latency, stays small and the rates are what the server sustains. A turn that finds
 * the window full is skipped (counted).
 */
export class Turns {
  /** Calls out now. */
  inFlight = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(devices: readonly SimDevice[], s: TurnSchedule, stats: SimStats, cache: ComponentCache) {
    const nextAt = Float64Array.from(devices, (_, k) => s.startAt + Math.floor((s.positions[k]! / s.fleetSize) * s.intervalMs));
    const busy = new Uint8Array(devices.length);
    const tick = (k: number): void => {
      // a device never overlaps its own calls: a slow server slows the fleet, like real agents
      if (busy[k] === 1) return;
      if (this.inFlight >= s.maxInFlight) {
        stats.skipped += 1;
        return;
      }
      const d = devices[k]!;
      busy[k] = 1;
      this.inFlight += 1;
      (Date.now() < s.pingUntil ? d.ping(stats) : d.tick(stats, cache))
        .catch((e: unknown) => {
          stats.errors += 1;
          stats.lastError = `${d.name}: ${(e as Error).message}`;
        })
        .finally(() => {
          busy[k] = 0;
          this.inFlight -= 1;
        });
    };
    this.timer = setInterval(() => {
      const now = Date.now();
      for (let k = 0; k < nextAt.length; k++) {
        if (nextAt[k]! > now) continue;
        nextAt[k] = nextAt[k]! + s.intervalMs * (1 + s.jitter * (2 * Math.random() - 1));
        if (nextAt[k]! <= now) nextAt[k] = now + s.intervalMs; // the process fell behind: no burst of turns to catch up
        tick(k);
      }
    }, SCHEDULE_TICK_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
