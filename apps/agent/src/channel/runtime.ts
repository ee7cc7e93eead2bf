import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckInResponse, Inventory, RenewCertificateResponse } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { crashPoint } from '../state-machine/crash-points.js';
import type { TargetFetcher } from '../staging/fetcher.js';
import type { Orchestrator } from '../transaction/orchestrator.js';
import { toAgentAssignment } from './assignments.js';
import { call, ChannelClients, deviceCredentials, errorCode, isTransient } from './client.js';
import { importIdentityKey, saveIdentity, type DeviceIdentityFiles } from './identity.js';
import { uploadLogBundle } from './log-upload.js';
import { backoffMs, uploadOutbox } from './outbox-uploader.js';
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
}

/**
 * The agent's side of the channel: check in, run assignments through the orchestrator,
 * upload the outbox, answer log requests, renew the certificate when told. One tick per
 * interval; failures back off and never end the loop.
 */
export class AgentRuntime {
  clients: ChannelClients;
  private fetcherP: Promise<ChannelTargetFetcher> | undefined;
  readonly orchestrator: Orchestrator;
  private identity: DeviceIdentityFiles;
  private failures = 0;

  constructor(private readonly o: RuntimeOptions) {
    this.identity = o.identity;
    this.clients = new ChannelClients(o.address, deviceCredentials(o.identity));
    // delegate, so a renewal's new connection is picked up
    this.orchestrator = o.makeOrchestrator({ fetchTarget: async (...args) => (await this.fetcher()).fetchTarget(...args) });
  }

  /** tuf-js and its dependencies load on the first fetch: an agent at rest stays small. */
  fetcher(): Promise<ChannelTargetFetcher> {
    this.fetcherP ??= import('./tuf-target-fetcher.js').then((m) => new m.ChannelTargetFetcher(this.clients.repository, `${this.o.dataDir}/tuf`));
    return this.fetcherP;
  }

  /** One heartbeat; returns the interval the server asks for. */
  async tick(): Promise<number> {
    const inventory = await this.o.inventory.next();
    const res = await call<CheckInResponse>((md, opts, cb) => this.clients.device.checkIn({ inventory }, md, opts, cb));
    this.o.inventory.delivered(inventory);
    // the release's max_offline_age_s is measured from this contact when its assignment is verified
    if (res.assignments.length > 0) await this.o.onContact?.();
    for (const w of res.assignments) {
      try {
        const a = await toAgentAssignment(w, async (path, max) => (await this.fetcher()).fetchBytes(path, max));
        const outcome = await this.orchestrator.apply(a);
        this.o.log('info', 'assignment', { rollout: w.rolloutId, status: outcome.status });
      } catch (err) {
        this.o.log('warn', 'assignment not applied', { rollout: w.rolloutId, reason: (err as Error).message });
      }
    }
    const up = await uploadOutbox({
      clients: this.clients,
      outbox: this.orchestrator.outbox,
      acknowledged: (tx) => this.orchestrator.markReported(tx),
      log: this.o.log,
    });
    if (up.uploaded.length + up.refused.length > 0) this.o.log('info', 'outbox', { ...up });
    // spec §4: a log request is fulfilled on the heartbeat that delivers it; one not uploaded
    // (collection or upload failed, the agent stopped) is delivered again on the next one
    for (const r of res.logRequests) {
      if (this.o.collectLogs === undefined) break;
      try {
        const bundle = await this.o.collectLogs(r.id);
        const up = await uploadLogBundle(this.clients, r.id, bundle.contentType, bundle.bytes);
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
    const res = await call<RenewCertificateResponse>((md, opts, cb) => this.clients.device.renewCertificate({ csrDer }, md, opts, cb));
    crashPoint('renewal-received');
    // the server keeps the old certificate current until the new one is first used: a crash
    // before this write leaves the old one working, and the next check-in asks again
    this.identity = { ...this.identity, certPem: encodePem(res.certificateDer, 'CERTIFICATE'), notAfter: res.notAfter ?? this.identity.notAfter };
    await saveIdentity(this.o.dataDir, this.identity);
    crashPoint('renewal-saved');
    this.clients.close();
    this.clients = new ChannelClients(this.o.address, deviceCredentials(this.identity));
    this.fetcherP = undefined;
    this.o.onRenewed?.(this.identity);
    this.o.log('info', 'certificate renewed', { not_after: this.identity.notAfter.toISOString() });
  }

  /** Resumes interrupted work, then ticks until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await this.orchestrator.resume();
    while (!signal.aborted) {
      let waitMs: number;
      try {
        waitMs = (await this.tick()) * 1000;
        this.failures = 0;
      } catch (err) {
        this.failures += 1;
        waitMs = backoffMs(this.failures);
        this.o.log(isTransient(err) ? 'warn' : 'error', 'check-in failed', { code: errorCode(err), reason: (err as Error).message, retry_ms: waitMs });
      }
      // a stop that arrives during the tick has already fired: the wait must not start
      await sleep(waitMs, undefined, { signal }).catch(() => undefined);
    }
    this.clients.close();
  }
}
