import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckInResponse, Inventory, RenewCertificateResponse } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { DEFAULT_CONNECTION, type ConnectionSettings } from '../config.js';
import { writeFileAtomic } from '../journal/io.js';
import { crashPoint } from '../state-machine/crash-points.js';
import type { TargetFetcher } from '../staging/fetcher.js';
import type { Orchestrator } from '../transaction/orchestrator.js';
import { toAgentAssignment } from './assignments.js';
import { call, deviceCredentials, errorCode, isTransient, type ChannelClients } from './client.js';
import { DeviceConnection } from './connection.js';
import { importIdentityKey, saveIdentity, type DeviceIdentityFiles } from './identity.js';
import { uploadLogBundle } from './log-upload.js';
import { uploadOutbox } from './outbox-uploader.js';
import { CheckInSchedule } from './schedule.js';
import type { ChannelTargetFetcher } from './tuf-target-fetcher.js';

export type Log = (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;

export interface RuntimeOptions {
  address: string;
  dataDir: string;
  identity: DeviceIdentityFiles;
  /** The inventory of each check-in; told which one the server answered (inventory/reporter.ts). */
  inventory: { next(): Promise<Inventory>; delivered(inv: Inventory): void };
  /** Built with `fetcher` (the channel's TargetFetcher) once the runtime exists. */
  makeOrchestrator(fetcher: TargetFetcher): Orchestrator;
  /** The bundle a log request asks for (main.ts: collectLogBundle, a tar.gz of journald and files). */
  collectLogs?(logRequestId: string): Promise<{ contentType: string; bytes: Uint8Array }>;
  /** A check-in that handed over assignments succeeded: the offline-age clock (journal.noteOnline). */
  onContact?(): Promise<void>;
  log: Log;
  /** After a renewal: receipts must embed the certificate the new connections carry. */
  onRenewed?(identity: DeviceIdentityFiles): void;
  /** SVC_AGENT_CONNECTION and SVC_AGENT_IDLE_CLOSE_S (default: per-check-in, 30 s). */
  connection?: ConnectionSettings;
  /** The schedule's randomness (schedule.ts); tests seed it. */
  random?: () => number;
}

/** The last check-in interval the server asked for: the first check-in after a start spreads over it. */
const INTERVAL_FILE = 'check-in.json';

/**
 * The agent's side of the channel: check in, run assignments through the orchestrator,
 * upload the outbox, answer log requests, renew the certificate when told. One tick per
 * interval (spread at random, schedule.ts); failures back off and never end the loop. Every
 * call goes through the device connection (connection.ts), which in per-check-in mode is
 * open only while calls are made.
 */
export class AgentRuntime {
  readonly connection: DeviceConnection;
  private fetcherP: { clients: ChannelClients; fetcher: Promise<ChannelTargetFetcher> } | undefined;
  readonly orchestrator: Orchestrator;
  private identity: DeviceIdentityFiles;
  private failures = 0;
  private readonly schedule: CheckInSchedule;
  private lastIntervalS: number | undefined;

  constructor(private readonly o: RuntimeOptions) {
    this.identity = o.identity;
    const settings = o.connection ?? DEFAULT_CONNECTION;
    this.schedule = new CheckInSchedule(o.random);
    this.connection = new DeviceConnection({
      address: o.address,
      credentials: () => deviceCredentials(this.identity),
      mode: settings.mode,
      idleCloseMs: settings.idleCloseS * 1000,
    });
    // every fetch runs inside the connection: downloads keep it open, and reopen it after an idle close
    this.orchestrator = o.makeOrchestrator({
      fetchTarget: (...args) => this.withClients(async (c) => (await this.fetcher(c)).fetchTarget(...args)),
      fetchDelta: (...args) => this.withClients(async (c) => (await this.fetcher(c)).fetchDelta(...args)),
    });
  }

  /** Runs `fn` with the device connection's clients (opened when closed). */
  withClients<T>(fn: (clients: ChannelClients) => Promise<T>): Promise<T> {
    return this.connection.use(fn);
  }

  /** tuf-js and its dependencies load on the first fetch: an agent at rest stays small. One per connection. */
  private fetcher(clients: ChannelClients): Promise<ChannelTargetFetcher> {
    if (this.fetcherP?.clients !== clients) {
      const fetcher = import('./tuf-target-fetcher.js').then((m) => new m.ChannelTargetFetcher(clients.repository, `${this.o.dataDir}/tuf`));
      this.fetcherP = { clients, fetcher };
    }
    return this.fetcherP.fetcher;
  }

  /** One heartbeat; returns the interval the server asks for. */
  async tick(): Promise<number> {
    const inventory = await this.o.inventory.next();
    const res = await this.withClients((c) => call<CheckInResponse>((md, opts, cb) => c.device.checkIn({ inventory }, md, opts, cb)));
    this.o.inventory.delivered(inventory);
    // the release's max_offline_age_s is measured from this contact when its assignment is verified
    if (res.assignments.length > 0) await this.o.onContact?.();
    for (const w of res.assignments) {
      try {
        const a = await toAgentAssignment(w, (path, max) => this.withClients(async (c) => (await this.fetcher(c)).fetchBytes(path, max)));
        const outcome = await this.orchestrator.apply(a);
        this.o.log('info', 'assignment', { rollout: w.rolloutId, status: outcome.status });
      } catch (err) {
        this.o.log('warn', 'assignment not applied', { rollout: w.rolloutId, reason: (err as Error).message });
      }
    }
    const up = await this.withClients((clients) =>
      uploadOutbox({
        clients,
        outbox: this.orchestrator.outbox,
        acknowledged: (tx) => this.orchestrator.markReported(tx),
        log: this.o.log,
      }),
    );
    if (up.uploaded.length + up.refused.length > 0) this.o.log('info', 'outbox', { ...up });
    // spec §4: a log request is fulfilled on the heartbeat that delivers it; one not uploaded
    // (collection or upload failed, the agent stopped) is delivered again on the next one
    for (const r of res.logRequests) {
      if (this.o.collectLogs === undefined) break;
      try {
        const bundle = await this.o.collectLogs(r.id);
        const up = await this.withClients((c) => uploadLogBundle(c, r.id, bundle.contentType, bundle.bytes));
        this.o.log('info', 'log bundle uploaded', { log_request: r.id, bytes: up.length, digest: up.digest });
      } catch (err) {
        this.o.log('warn', 'log bundle not uploaded', { log_request: r.id, code: errorCode(err), reason: (err as Error).message });
      }
    }
    if (res.renewCertificate) await this.renew();
    return res.checkInIntervalS || 60;
  }

  /** A fresh certificate for the same identity key; new connections use it. */
  async renew(): Promise<void> {
    const keys = await importIdentityKey(this.identity.keyPem);
    const { buildCsr } = await import('./csr.js');
    const csrDer = await buildCsr(keys, this.identity.deviceName);
    const res = await this.withClients((c) => call<RenewCertificateResponse>((md, opts, cb) => c.device.renewCertificate({ csrDer }, md, opts, cb)));
    crashPoint('renewal-received');
    // the server keeps the old certificate current until the new one is first used: a crash
    // before this write leaves the old one working, and the next check-in asks again
    this.identity = { ...this.identity, certPem: encodePem(res.certificateDer, 'CERTIFICATE'), notAfter: res.notAfter ?? this.identity.notAfter };
    await saveIdentity(this.o.dataDir, this.identity);
    crashPoint('renewal-saved');
    // the next call connects with the new certificate
    this.connection.reset();
    this.o.onRenewed?.(this.identity);
    this.o.log('info', 'certificate renewed', { not_after: this.identity.notAfter.toISOString() });
  }

  /** Resumes interrupted work, then ticks until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await this.orchestrator.resume();
    this.lastIntervalS = await this.readLastInterval();
    // a fleet started together (power back, host-wide restart) does not check in together
    let waitMs = this.schedule.firstMs(this.lastIntervalS);
    if (waitMs > 0) this.o.log('info', 'first check-in', { in_ms: waitMs });
    await sleep(waitMs, undefined, { signal }).catch(() => undefined);
    while (!signal.aborted) {
      try {
        const intervalS = await this.tick();
        this.failures = 0;
        waitMs = this.schedule.nextMs(intervalS);
        await this.rememberInterval(intervalS);
      } catch (err) {
        this.failures += 1;
        const next = this.schedule.failureMs(this.failures, err);
        waitMs = next.waitMs;
        const fields = { code: errorCode(err), reason: (err as Error).message, retry_ms: waitMs };
        if (next.retryAfterMs !== undefined) {
          // the server closes a connection it refused for load: the next attempt connects again
          this.connection.reset();
          this.o.log('warn', 'check-in refused, server busy', { ...fields, retry_after_ms: next.retryAfterMs });
        } else {
          this.o.log(isTransient(err) ? 'warn' : 'error', 'check-in failed', fields);
        }
      }
      // a stop that arrives during the tick has already fired: the wait must not start
      await sleep(waitMs, undefined, { signal }).catch(() => undefined);
    }
    this.connection.close();
  }

  private async readLastInterval(): Promise<number | undefined> {
    try {
      const doc = JSON.parse(await readFile(join(this.o.dataDir, INTERVAL_FILE), 'utf8')) as { interval_s?: unknown };
      return typeof doc.interval_s === 'number' && Number.isInteger(doc.interval_s) && doc.interval_s > 0 ? doc.interval_s : undefined;
    } catch {
      return undefined; // never checked in, or unreadable: no spread
    }
  }

  private async rememberInterval(intervalS: number): Promise<void> {
    if (intervalS === this.lastIntervalS) return;
    this.lastIntervalS = intervalS;
    try {
      await mkdir(this.o.dataDir, { recursive: true });
      await writeFileAtomic(join(this.o.dataDir, INTERVAL_FILE), new TextEncoder().encode(JSON.stringify({ interval_s: intervalS })));
    } catch (err) {
      this.o.log('warn', 'check-in interval not saved', { reason: (err as Error).message });
    }
  }
}
