/**
 * One thread of a simulator run with `--threads T` (main.ts `runThreads`): it holds its share of
 * the fleet (every T-th device, in its own IdentityArena: the same compact identities, only its
 * devices present), runs their turns (turns.ts) with its share of --max-in-flight, and posts its
 * counters to the main thread every SNAPSHOT_MS; on `stop` it closes its devices, posts a last
 * snapshot and ends. TLS, HTTP/2 and the receipts' signatures then run on T event loops instead
 * of one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SimDevice, type ComponentCache, type SimFleet, type SimStats } from './device.js';
import { IdentityArena } from './identity-arena.js';
import { LatencyHistogram } from './latency.js';
import { SCALAR_BYTES } from './sim-key.js';
import { Turns, type TurnSchedule } from './turns.js';
import { ServerPin } from './wire.js';
import { DEVICE_CHANNEL_TLS_NAME } from '../channel/client.js';

/** What the main thread hands a turn thread. */
export interface TurnWorkerData {
  server: string;
  serverCaPem: string;
  mode: 'per-check-in';
  idleCloseMs: number;
  prefix: string;
  /** Devices of the whole fleet (the arena's capacity). */
  capacity: number;
  tenants: string[];
  /** This thread's devices: fleet index, identity (scalar, certificate, tenant index). */
  indices: Uint32Array;
  scalars: Uint8Array;
  certs: Uint8Array;
  certLengths: Uint16Array;
  tenantIndex: Uint8Array;
  schedule: TurnSchedule;
}

/** A turn thread's counters so far (cumulative). */
export interface TurnSnapshot {
  stats: SimStats;
  inFlight: number;
  open: number;
  checkIn: Uint32Array;
  ping: Uint32Array;
  final: boolean;
}

const SNAPSHOT_MS = 250;

function run(data: TurnWorkerData, port: NonNullable<typeof parentPort>): void {
  const arena = new IdentityArena(data.capacity);
  let certAt = 0;
  for (let k = 0; k < data.indices.length; k++) {
    const length = data.certLengths[k]!;
    arena.set(
      data.indices[k]!,
      data.scalars.subarray(k * SCALAR_BYTES, (k + 1) * SCALAR_BYTES),
      data.certs.subarray(certAt, certAt + length),
      data.tenants[data.tenantIndex[k]!]!,
    );
    certAt += length;
  }
  const stats: SimStats = { connects: 0, pings: 0, checkIns: 0, receipts: 0, duplicates: 0, errors: 0, skipped: 0 };
  const fleet: SimFleet = {
    server: data.server,
    pin: new ServerPin(data.serverCaPem, DEVICE_CHANNEL_TLS_NAME),
    mode: data.mode,
    idleCloseMs: data.idleCloseMs,
    stats,
    open: 0,
    arena,
    prefix: data.prefix,
    latency: { checkIn: new LatencyHistogram(), ping: new LatencyHistogram() },
  };
  const devices = Array.from(data.indices, (i) => new SimDevice(i, fleet));
  const cache: ComponentCache = new Map();
  const turns = new Turns(devices, data.schedule, stats, cache);
  const snapshot = (final: boolean): TurnSnapshot => ({
    stats: { ...stats },
    inFlight: turns.inFlight,
    open: fleet.open,
    checkIn: fleet.latency.checkIn.mark(),
    ping: fleet.latency.ping.mark(),
    final,
  });
  const timer = setInterval(() => port.postMessage(snapshot(false)), SNAPSHOT_MS);
  port.on('message', (m: { type: string }) => {
    if (m.type !== 'stop') return;
    clearInterval(timer);
    turns.stop();
    for (const d of devices) d.close();
    port.postMessage(snapshot(true));
    port.close();
  });
}

if (parentPort !== null && (workerData as { schedule?: unknown } | undefined)?.schedule !== undefined) run(workerData as TurnWorkerData, parentPort);
