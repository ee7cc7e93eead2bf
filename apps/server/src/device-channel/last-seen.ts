import type { Kysely } from 'kysely';
import { advanceLastSeen, markDevicesOnline } from '../resources/devices/queries/presence.js';
import { inTransaction } from '../store/tx.js';
import type { Database } from '../store/database.js';
import type { ChannelLogger } from './grpc-status.js';

/**
 * Heartbeats, coalesced per process: a check-in that changes no inventory records its time
 * here, and every `flushMs` (1 s) one transaction writes all of them: `advanceLastSeen` (a HOT
 * update per device, no index entry) and, for devices that were offline, `markDevicesOnline`
 * (status and an `online` history entry; the counts and list-version rows are written once per
 * flush, not once per device: after an outage thousands of devices come back at once, and with
 * one transaction each they would all queue on those per-tenant rows). No audit row: a heartbeat changes
 * no setting. A device checking in twice within one flush costs one row write.
 *
 * Bounded staleness: `devices.last_seen` (and an offline device's return to `online`) trails
 * its latest check-in by at most `flushMs` plus one transaction, on every process. The offline detector flags a device after
 * max(90 s, 2.5 check-in intervals) without one, far beyond that, so a device that keeps
 * checking in is never flagged by the delay; the device views show `last_seen` up to about a
 * second old. A flush that fails keeps its entries for the next one (the newest time per
 * device wins); `close()` writes what is left, so a graceful stop loses nothing. A process
 * killed outright loses at most its last second of heartbeats: the devices' next check-ins
 * (on any process) write them again.
 */
export class LastSeenBuffer {
  /** Device id -> its latest check-in, and whether it was offline when it checked in. */
  private pending = new Map<string, { at: Date; offline: boolean }>();
  private flushing: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: ChannelLogger,
    readonly flushMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  get size(): number {
    return this.pending.size;
  }

  seen(deviceId: string, at: Date, offline = false): void {
    const prev = this.pending.get(deviceId);
    if (prev === undefined || prev.at < at) this.pending.set(deviceId, { at, offline: offline || prev?.offline === true });
    else if (offline) prev.offline = true;
  }

  /** Writes everything recorded so far (one flush at a time; a caller joins a running one, then runs its own). */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const all = [...batch].map(([id, e]) => ({ id, at: e.at }));
    const offline = [...batch].filter(([, e]) => e.offline).map(([id, e]) => ({ id, at: e.at }));
    this.flushing = inTransaction(this.db, async (trx) => {
      await advanceLastSeen(trx, all);
      await markDevicesOnline(trx, offline);
    }).then(
      () => undefined,
      (err: unknown) => {
        this.log.error({ err, devices: batch.size }, 'last_seen flush failed; kept for the next one');
        for (const [id, e] of batch) this.seen(id, e.at, e.offline);
      },
    );
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
