import type { Assignment, CheckInResponse, UploadReceiptResponse } from '@svc/device-proto';
import {
  buildReceiptPayload,
  decodePem,
  digestHex,
  envelopeBytes,
  hashedTargetPath,
  isDigest,
  parsePrivateKeyPem,
  sha256Digest,
  signReceipt,
  type Digest,
  type PrivateKey,
  type ReceiptPayload,
} from '@svc/release-core';
import { connectivityState } from '@grpc/grpc-js';
import { call } from '../channel/client.js';
import { readRepoFile } from '../channel/repo-stream.js';
import { SimClients, type SimEnroller } from './clients.js';

export interface SimStats {
  pings: number;
  checkIns: number;
  receipts: number;
  duplicates: number;
  errors: number;
  /** Turns not taken because --max-in-flight calls were already out. */
  skipped: number;
  lastError?: string;
}

/** Release components, read once per envelope target and shared by every simulated device. */
export type ComponentCache = Map<string, Promise<Map<string, Digest>>>;

/**
 * One simulated device: its own P-256 key and certificate, its own mTLS connection, the real
 * protocol. It "installs" with an in-memory fake (nothing is placed) but signs and uploads a
 * real receipt for every signed assignment. Memory per device: the key, the certificate and
 * one HTTP/2 connection.
 */
export class SimDevice {
  private clients!: SimClients;
  private key!: PrivateKey;
  private certDer!: Uint8Array;
  private tenant = '';
  private readonly done = new Set<string>();
  /** Signed receipts not yet acknowledged: retried from these exact bytes (spec §2.3 rule 2). */
  private readonly unsent = new Map<string, Uint8Array>();

  constructor(readonly name: string) {}

  async enroll(enroller: SimEnroller, server: string, token: string): Promise<void> {
    const { id, creds } = await enroller.enroll({ token, deviceName: this.name, inventory: INVENTORY });
    this.key = parsePrivateKeyPem(id.keyPem);
    this.certDer = decodePem(id.certPem, 'CERTIFICATE');
    this.tenant = id.tenantId;
    // the device's own connection is opened lazily by its first call
    this.clients = new SimClients(server, creds);
  }

  /** Opens the device's connection now rather than at its first call (a real agent keeps one open). */
  connect(): void {
    this.clients.device.getChannel().getConnectivityState(true);
  }

  /** Whether its connection is up (the TLS handshake done). */
  get connected(): boolean {
    return this.clients.device.getChannel().getConnectivityState(false) === connectivityState.READY;
  }

  /** Authenticated empty call over the same mTLS connection (benchmark baseline). */
  async ping(stats: SimStats): Promise<void> {
    await call((md, opts, cb) => this.clients.device.ping({}, md, opts, cb));
    stats.pings += 1;
  }

  async tick(stats: SimStats, cache: ComponentCache): Promise<void> {
    const res = await call<CheckInResponse>((md, opts, cb) => this.clients.device.checkIn({ inventory: INVENTORY }, md, opts, cb));
    stats.checkIns += 1;
    const listed = new Set(res.assignments.map((a) => a.transaction?.id ?? a.rolloutId));
    // A receipt whose answer was lost (the server went away mid-call) may have been accepted, and
    // then its assignment is no longer listed: like the agent's outbox, it is sent again from the
    // same bytes on the next turn whatever the check-in lists, and answered as a duplicate.
    for (const [key, bytes] of this.unsent) if (!listed.has(key)) await this.upload(key, bytes, stats);
    for (const a of res.assignments) {
      const key = a.transaction?.id ?? a.rolloutId;
      if (this.done.has(key) || a.release === undefined) continue;
      let bytes = this.unsent.get(key);
      if (bytes === undefined) {
        const digests = await this.components(a, cache);
        bytes = envelopeBytes(signReceipt(this.receipt(a, digests), this.key));
        this.unsent.set(key, bytes);
      }
      await this.upload(key, bytes, stats);
    }
  }

  private async upload(key: string, bytes: Uint8Array, stats: SimStats): Promise<void> {
    const r = await call<UploadReceiptResponse>((md, opts, cb) => this.clients.device.uploadReceipt({ envelope: Buffer.from(bytes) }, md, opts, cb));
    stats.receipts += 1;
    if (r.duplicate) stats.duplicates += 1;
    this.unsent.delete(key);
    this.done.add(key);
  }

  close(): void {
    this.clients?.close();
  }

  private components(a: Assignment, cache: ComponentCache): Promise<Map<string, Digest>> {
    const target = a.release!.envelopeTarget;
    let p = cache.get(target);
    if (p === undefined) {
      p = this.fetchComponents(a);
      cache.set(target, p);
      p.catch(() => cache.delete(target));
    }
    return p;
  }

  /** The envelope over GetFile (checked against the assignment's digest), component -> digest. */
  private async fetchComponents(a: Assignment): Promise<Map<string, Digest>> {
    const target = a.release!.envelopeTarget;
    const digest = a.release!.envelopeDigest;
    if (!isDigest(digest)) throw new Error(`envelope ${target}: digest ${digest} is not sha256:<64 hex>`);
    const bytes = await readRepoFile(this.clients.repository, `targets/${hashedTargetPath(target, digestHex(digest))}`);
    if (sha256Digest(bytes) !== digest) throw new Error(`envelope ${target}: digest mismatch`);
    const env = JSON.parse(bytes.toString('utf8')) as { payload: string };
    const payload = JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8')) as { components: { name: string; digest: unknown }[] };
    return new Map(
      payload.components.map((c) => {
        if (!isDigest(c.digest)) throw new Error(`envelope ${target}: component ${c.name} has no sha256 digest`);
        return [c.name, c.digest];
      }),
    );
  }

  /** A successful install of every member: candidate = resulting, nothing installed before. */
  private receipt(a: Assignment, digests: Map<string, Digest>): ReceiptPayload {
    const { product, version, payloadDigest, envelopeDigest } = a.release!;
    const tx = a.transaction!;
    if (!isDigest(payloadDigest) || !isDigest(envelopeDigest)) throw new Error(`assignment ${a.rolloutId}: release digests are not sha256:<64 hex>`);
    return buildReceiptPayload({
      tenant: this.tenant,
      device: { name: this.name, certificateDer: this.certDer },
      release: { product, version, payload_digest: payloadDigest, envelope_digest: envelopeDigest },
      transaction: { id: tx.id, member_count: tx.memberCount },
      members: tx.members.map((m) => {
        const d = digests.get(m.component)!;
        return {
          group: m.group,
          position: m.position,
          component: m.component,
          rollout: m.rolloutId,
          candidate_digest: d,
          previous_digest: null,
          resulting_digest: d,
          verdict: 'committed',
        };
      }),
      activation: 'activated',
      health: 'healthy',
      now: new Date(),
    });
  }
}

const INVENTORY = { agentVersion: '0.1.0-sim', profile: 'linux-arm64', product: 'sim', slots: [], attributes: undefined };
