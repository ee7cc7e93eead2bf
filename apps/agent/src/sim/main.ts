#!/usr/bin/env node
/**
 * Fleet simulator: `pnpm sim --devices N --token T [--server host:port] [--interval S]
 * [--server-ca PATH] [--duration S] [--max-in-flight C] [--connection persistent|per-check-in] [--idle-close S]`.
 * Enrolls N devices in ONE process against a running
 * server (real enrollment, real mTLS per device, real signed receipts) and keeps them
 * checking in. Prints one JSON stats line every --stats-every seconds and a summary at exit.
 * Exits 1, the reason on stderr, when a device did not enroll or more than --max-errors calls
 * failed (simFailure); 2 on a usage error (SIM_USAGE).
 */
import { readFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { parseSimArgs, SIM_USAGE, UsageError, type SimArgs } from './args.js';
import { status } from '@grpc/grpc-js';
import { DeviceServiceService } from '@svc/device-proto';
import { DEVICE_CHANNEL_TLS_NAME } from '../channel/client.js';
import { SimEnroller } from './clients.js';
import { connectAs, SimDevice, simDeviceName, type ComponentCache, type SimFleet, type SimStats } from './device.js';
import { IdentityArena } from './identity-arena.js';
import { IdentityCacheError, loadIdentityCache, saveIdentityCache, serverCaFingerprint } from './identity-cache.js';
import { LatencyHistogram } from './latency.js';
import { SCALAR_BYTES } from './sim-key.js';
import type { TurnSnapshot, TurnWorkerData } from './turn-worker.js';
import { Turns, type TurnSchedule } from './turns.js';
import { ServerPin } from './wire.js';

async function runPool(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/**
 * Fills `arena` with an identity per device: first from the --identities cache (checked for
 * this server, CA and prefix), then by enrolling the rest, --concurrency calls in flight over
 * --enroll-lanes connections. A cache is written back when this run enrolled devices.
 */
async function enrollFleet(
  args: SimArgs,
  serverCaPem: string,
  fleet: SimFleet,
  signal: AbortSignal,
  print: (line: string) => void,
): Promise<{ cached: number; enrolledNow: number }> {
  const { arena, stats } = fleet;
  const header = { server: args.server, server_ca_sha256: serverCaFingerprint(serverCaPem), prefix: args.prefix };
  const cachedTenants = args.identities === undefined ? undefined : await loadIdentityCache(args.identities, header, arena);
  const cached = arena.count;
  if (cached > 0) await checkCachedIdentity(args, fleet);
  let enrolledNow = 0;
  if (cached < args.devices) {
    const enroller = new SimEnroller(args.server, serverCaPem, args.enrollLanes);
    // a large fleet takes minutes to enroll: show how far it has come
    const progress = setInterval(
      () => print(JSON.stringify({ event: 'enrolling', devices: arena.count, cached, enrolled_now: enrolledNow, errors: stats.errors })),
      args.statsEveryS * 1000,
    );
    const missing: number[] = [];
    for (let i = 0; i < args.devices; i++) if (!arena.has(i)) missing.push(i);
    await runPool(missing.length, args.concurrency, async (k) => {
      if (signal.aborted) return;
      const i = missing[k]!;
      const name = simDeviceName(args.prefix, i);
      try {
        const { scalar, certDer, tenant } = await enroller.enrollCompact({ token: args.token, deviceName: name });
        if (cachedTenants !== undefined && cachedTenants.length > 0 && !cachedTenants.includes(tenant))
          throw new IdentityCacheError(
            'IDENTITY_CACHE_MISMATCH',
            `--identities ${args.identities}: holds devices of tenant ${cachedTenants.join(', ')}, --token enrolls into tenant ${tenant}`,
          );
        arena.set(i, scalar, certDer, tenant);
        enrolledNow += 1;
      } catch (e) {
        stats.errors += 1;
        stats.lastError = `enroll ${name}: ${(e as Error).message}`;
      }
    });
    clearInterval(progress);
    enroller.close();
  }
  if (args.identities !== undefined && enrolledNow > 0) await saveIdentityCache(args.identities, header, arena);
  return { cached, enrolledNow };
}

/**
 * A cache matching the server's address and CA can still be foreign to it (another database or
 * schema behind the same CA, devices decommissioned since): one authenticated call with the
 * first cached identity finds out before the fleet starts, and the run stops with the reason.
 */
async function checkCachedIdentity(args: SimArgs, fleet: SimFleet): Promise<void> {
  const { arena } = fleet;
  let i = 0;
  while (!arena.has(i)) i++;
  const conn = connectAs(fleet, i);
  try {
    await conn.unary(DeviceServiceService.ping, {});
  } catch (e) {
    const code = (e as { code?: number }).code;
    if (code === status.UNAUTHENTICATED || code === status.PERMISSION_DENIED || code === status.NOT_FOUND)
      throw new IdentityCacheError(
        'IDENTITY_CACHE_MISMATCH',
        `--identities ${args.identities}: the server refused cached device ${simDeviceName(args.prefix, i)} of tenant ${arena.tenant(i)} ` +
          `(${(e as Error).message}); the cache was enrolled against another server or tenant, or its devices were removed: use another file (or delete this one) to enroll afresh`,
      );
    throw e;
  } finally {
    conn.close();
  }
}

/** The fleet's turns on a thread or several; `stop` ends them and closes every connection. */
interface RunningTurns {
  readonly inFlight: number;
  stop(): Promise<void>;
}

/** Every device's turns on this thread. */
function runHere(devices: SimDevice[], schedule: TurnSchedule, stats: SimStats): RunningTurns {
  const turns = new Turns(devices, schedule, stats, new Map() as ComponentCache);
  return {
    get inFlight() {
      return turns.inFlight;
    },
    stop: () => {
      turns.stop();
      for (const d of devices) d.close();
      return Promise.resolve();
    },
  };
}

/**
 * `--threads T` (per-check-in): the devices dealt round-robin over T worker threads of this one
 * process (turn-worker.ts), each with its identities copied into an arena of its own and
 * 1/T of --max-in-flight; their counters and latency buckets are summed into `fleet` here, so
 * the stats lines and the summary read as with one thread. The enrollment and the identity
 * cache stay on this thread.
 */
function runThreads(
  args: SimArgs,
  serverCaPem: string,
  arena: IdentityArena,
  enrolled: SimDevice[],
  schedule: (positions: ArrayLike<number>, maxInFlight: number) => TurnSchedule,
  fleet: SimFleet,
): RunningTurns {
  const threads = Math.min(args.threads, enrolled.length);
  const last: TurnSnapshot[] = [];
  const finals: Promise<void>[] = [];
  const workers: Worker[] = [];
  const fields = ['connects', 'pings', 'checkIns', 'receipts', 'duplicates', 'errors', 'skipped'] as const;
  for (let t = 0; t < threads; t++) {
    const mine = enrolled.filter((_, k) => k % threads === t);
    const positions = Uint32Array.from(enrolled.keys()).filter((k) => k % threads === t);
    const certLengths = Uint16Array.from(mine, (d) => arena.certDer(d.index).length);
    const data: TurnWorkerData = {
      server: args.server,
      serverCaPem,
      mode: 'per-check-in',
      idleCloseMs: args.idleCloseS * 1000,
      prefix: args.prefix,
      capacity: args.devices,
      tenants: [...arena.tenants],
      indices: Uint32Array.from(mine, (d) => d.index),
      scalars: Buffer.concat(
        mine.map((d) => arena.scalar(d.index)),
        mine.length * SCALAR_BYTES,
      ),
      certs: Buffer.concat(mine.map((d) => arena.certDer(d.index))),
      certLengths,
      tenantIndex: Uint8Array.from(mine, (d) => arena.tenants.indexOf(arena.tenant(d.index))),
      schedule: schedule(positions, Math.max(1, Math.round(args.maxInFlight / threads))),
    };
    const w = new Worker(new URL('./turn-worker.js', import.meta.url), { workerData: data });
    workers.push(w);
    last.push({
      stats: { connects: 0, pings: 0, checkIns: 0, receipts: 0, duplicates: 0, errors: 0, skipped: 0 },
      inFlight: 0,
      open: 0,
      checkIn: new Uint32Array(0),
      ping: new Uint32Array(0),
      final: false,
    });
    finals.push(
      new Promise<void>((done) => {
        w.on('message', (m: TurnSnapshot) => {
          const prev = last[t]!;
          for (const f of fields) fleet.stats[f] += m.stats[f] - prev.stats[f];
          if (m.stats.lastError !== undefined) fleet.stats.lastError = m.stats.lastError;
          fleet.open += m.open - prev.open;
          fleet.latency.checkIn.add(m.checkIn, prev.checkIn);
          fleet.latency.ping.add(m.ping, prev.ping);
          last[t] = m;
          if (m.final) done();
        });
        w.on('error', (e) => {
          fleet.stats.errors += 1;
          fleet.stats.lastError = `thread ${t}: ${e.message}`;
          done();
        });
        w.on('exit', () => done());
      }),
    );
  }
  return {
    get inFlight() {
      return last.reduce((n, m) => n + m.inFlight, 0);
    },
    stop: async () => {
      for (const w of workers) w.postMessage({ type: 'stop' });
      await Promise.all(finals);
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

export type SimSummary = SimStats & {
  enrolled: number;
  rssPerDeviceKiB?: number;
  /** Percentiles of the check-ins and pings that succeeded over the whole run, in ms (latency.ts buckets). */
  checkInP50Ms?: number;
  checkInP99Ms?: number;
  pingP50Ms?: number;
  pingP99Ms?: number;
};

/**
 * Why a finished run did not reach its goal, or undefined when it did: every device enrolled
 * (an enrollment failure is never tolerated) and at most --max-errors calls failed.
 */
export function simFailure(args: SimArgs, s: SimSummary): string | undefined {
  if (s.enrolled < args.devices) {
    const why = s.lastError === undefined ? 'stopped before every enrollment was attempted' : `last error: ${s.lastError}`;
    return `enrolled ${s.enrolled} of ${args.devices} devices (${why})`;
  }
  if (s.errors > args.maxErrors) return `${s.errors} errors (--max-errors ${args.maxErrors}; last error: ${s.lastError ?? 'none'})`;
  return undefined;
}

export async function runSim(args: SimArgs, signal: AbortSignal, print: (line: string) => void): Promise<SimSummary> {
  const serverCaPem = await readFile(args.serverCa, 'utf8');
  const stats: SimStats = { connects: 0, pings: 0, checkIns: 0, receipts: 0, duplicates: 0, errors: 0, skipped: 0 };
  // memory per simulated device: the process's RSS growth since here, over the enrolled devices
  // (after a full GC when node runs with --expose-gc, so enrollment's garbage is not counted)
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rss0 = process.memoryUsage().rss;
  const live = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  };
  const live0 = live();
  const kib = (bytes: number, n: number) => Math.round((bytes / 1024 / n) * 10) / 10;
  const perDeviceKiB = (n: number) => {
    if (n === 0) return undefined;
    gc?.();
    return kib(process.memoryUsage().rss - rss0, n);
  };
  /** V8 heap and external memory still live per device (after the GC perDeviceKiB ran; with --expose-gc). */
  const livePerDeviceKiB = (n: number) => (n === 0 ? undefined : kib(live() - live0, n));
  const arena = new IdentityArena(args.devices);
  const fleet: SimFleet = {
    server: args.server,
    pin: new ServerPin(serverCaPem, DEVICE_CHANNEL_TLS_NAME),
    mode: args.connection,
    idleCloseMs: args.idleCloseS * 1000,
    stats,
    open: 0,
    arena,
    prefix: args.prefix,
    latency: { checkIn: new LatencyHistogram(), ping: new LatencyHistogram() },
  };
  const t0 = Date.now();
  const { cached, enrolledNow } = await enrollFleet(args, serverCaPem, fleet, signal, print);
  const seconds = (Date.now() - t0) / 1000;
  const enrolled: SimDevice[] = [];
  for (let i = 0; i < args.devices; i++) if (arena.has(i)) enrolled.push(new SimDevice(i, fleet));
  print(
    JSON.stringify({
      event: 'enrolled',
      devices: enrolled.length,
      cached,
      enrolled_now: enrolledNow,
      seconds,
      enrollments_per_s: enrolledNow === 0 ? undefined : Math.round((enrolledNow / seconds) * 10) / 10,
      errors: stats.errors,
      last_error: stats.lastError,
      connection: args.connection,
      identity_bytes_per_device: enrolled.length === 0 ? undefined : Math.round(arena.bytesUsed / enrolled.length),
      rss_per_device_kib: perDeviceKiB(enrolled.length),
      live_per_device_kib: livePerDeviceKiB(enrolled.length),
    }),
  );
  // no device to run: the run already failed (simFailure), waiting for --duration shows nothing
  if (enrolled.length === 0) return { ...stats, enrolled: 0 };

  // persistent: every device holds its connection from the start, whether or not its first turn
  // finds room in the in-flight window. The turns (and the --ping-first period) start once the
  // handshakes are done or after 5 minutes, so a phase never measures the connection storm.
  // per-check-in: a device connects at its turn.
  if (args.connection === 'persistent') {
    for (const d of enrolled) d.connect();
    const t1 = Date.now();
    let ready = 0;
    while (!signal.aborted && Date.now() - t1 < 300_000) {
      ready = enrolled.filter((d) => d.connected).length;
      if (ready === enrolled.length) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    print(
      JSON.stringify({
        event: 'connected',
        devices: ready,
        seconds: (Date.now() - t1) / 1000,
        rss_per_device_kib: perDeviceKiB(enrolled.length),
        live_per_device_kib: livePerDeviceKiB(enrolled.length),
      }),
    );
  }
  // spread the fleet evenly over one interval, like real devices that booted at random times
  const pingUntil = Date.now() + args.pingFirstS * 1000;
  const schedule = (positions: ArrayLike<number>, maxInFlight: number): TurnSchedule => ({
    positions,
    fleetSize: enrolled.length,
    startAt: Date.now(),
    intervalMs: args.intervalS * 1000,
    jitter: args.jitterPct / 100,
    pingUntil,
    maxInFlight,
  });
  const running =
    args.threads > 1 && args.connection === 'per-check-in'
      ? runThreads(args, serverCaPem, arena, enrolled, schedule, fleet)
      : runHere(
          enrolled,
          schedule(
            Array.from(enrolled, (_, k) => k),
            args.maxInFlight,
          ),
          stats,
        );
  let last = { ...stats, at: Date.now() };
  let marks = { checkIn: fleet.latency.checkIn.mark(), ping: fleet.latency.ping.mark() };
  const statsTimer = setInterval(() => {
    const now = Date.now();
    const dt = (now - last.at) / 1000;
    print(
      JSON.stringify({
        event: 'stats',
        mode: now < pingUntil ? 'ping' : 'check-in',
        pings_per_s: Math.round(((stats.pings - last.pings) / dt) * 10) / 10,
        check_ins_per_s: Math.round(((stats.checkIns - last.checkIns) / dt) * 10) / 10,
        receipts_per_s: Math.round(((stats.receipts - last.receipts) / dt) * 10) / 10,
        // percentiles of this line's interval (ms; absent when no such call succeeded in it)
        check_in_p50_ms: fleet.latency.checkIn.percentile(50, marks.checkIn),
        check_in_p99_ms: fleet.latency.checkIn.percentile(99, marks.checkIn),
        ping_p99_ms: fleet.latency.ping.percentile(99, marks.ping),
        pings: stats.pings,
        check_ins: stats.checkIns,
        receipts: stats.receipts,
        errors: stats.errors,
        skipped: stats.skipped,
        in_flight: running.inFlight,
        open_connections: fleet.open,
        connects: stats.connects,
        last_error: stats.lastError,
        rss_mb: Math.round(process.memoryUsage().rss / 1048576),
        rss_per_device_kib: perDeviceKiB(enrolled.length),
        live_per_device_kib: livePerDeviceKiB(enrolled.length),
      }),
    );
    last = { ...stats, at: now };
    marks = { checkIn: fleet.latency.checkIn.mark(), ping: fleet.latency.ping.mark() };
  }, args.statsEveryS * 1000);
  await new Promise<void>((resolve) => {
    if (args.durationS > 0) setTimeout(resolve, args.durationS * 1000).unref();
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
  clearInterval(statsTimer);
  const rssPerDeviceKiB = perDeviceKiB(enrolled.length);
  await running.stop();
  const { checkIn, ping } = fleet.latency;
  return {
    ...stats,
    enrolled: enrolled.length,
    ...(rssPerDeviceKiB === undefined ? {} : { rssPerDeviceKiB }),
    checkInP50Ms: checkIn.percentile(50),
    checkInP99Ms: checkIn.percentile(99),
    pingP50Ms: ping.percentile(50),
    pingP99Ms: ping.percentile(99),
  };
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  let args: SimArgs;
  try {
    args = parseSimArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`svc-sim: ${(e as Error).message}\n${SIM_USAGE}\n`);
    process.exit(2);
  }
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  runSim(args, stop.signal, (l) => process.stdout.write(`${l}\n`)).then(
    (s) => {
      process.stdout.write(`${JSON.stringify({ event: 'summary', ...s })}\n`);
      const failure = simFailure(args, s);
      if (failure !== undefined) process.stderr.write(`svc-sim: ${failure}\n`);
      process.exit(failure === undefined ? 0 : 1);
    },
    (e: unknown) => {
      process.stderr.write(`svc-sim: ${e instanceof UsageError || e instanceof IdentityCacheError ? '' : 'failed: '}${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
