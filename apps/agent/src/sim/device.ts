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
import { connectivityState, credentials } from '@grpc/grpc-js';
import { encodePem } from '@svc/release-core';
import { call } from '../channel/client.js';
import { readRepoFile } from '../channel/repo-stream.js';
import { SimClients, type SimEnroller } from './clients.js';

export interface SimStats {
  /** Connections opened (per-check-in: one per turn that found the device's connection closed). */
  connects: number;
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

/** What every simulated device shares: the server, the pinned server CA, the connection mode, the open-connection count. */
export interface SimFleet {
  server: string;
  serverCa: Buffer;
  mode: 'persistent' | 'per-check-in';
  idleCloseMs: number;
  stats: SimStats;
  /** Connections open now. */
  open: number;
}

/**
 * One simulated device: its own P-256 key and certificate, its own mTLS connection, the real
 * protocol. It "installs" with an in-memory fake (nothing is placed) but signs and uploads a
 * real receipt for every signed assignment.
 *
 * `persistent`: the connection (and its grpc-js credentials, which hold an OpenSSL context of
 * their own) lives from enrollment to the end. `per-check-in`: like the agent's default, a turn
 * connects, and the connection closes after `idleCloseMs` without a call; at rest a device is
 * only its key (PKCS#8 PEM), its certificate (DER) and its tenant, and the credentials are made
 * per connection.
 */
export class SimDevice {
  private clients: SimClients | undefined;
  private keyPem = '';
  private certDer!: Uint8Array;
  private tenant = '';
  private inFlight = 0;
  private idle: NodeJS.Timeout | undefined;
  private readonly done = new Set<string>();
  /** Signed receipts not yet acknowledged: retried from these exact bytes (spec §2.3 rule 2). */
  private readonly unsent = new Map<string, Uint8Array>();

  constructor(
    readonly name: string,
    private readonly fleet: SimFleet,
  ) {}

  async enroll(enroller: SimEnroller, token: string): Promise<void> {
    const persistent = this.fleet.mode === 'persistent';
    const { id, creds } = await enroller.enroll({ token, deviceName: this.name, inventory: INVENTORY }, persistent);
    this.keyPem = id.keyPem;
    this.certDer = decodePem(id.certPem, 'CERTIFICATE');
    this.tenant = id.tenantId;
    // persistent: the device's own connection, opened lazily by its first call or connect()
    if (persistent && creds !== undefined) this.open(new SimClients(this.fleet.server, creds));
  }

  private open(clients: SimClients): SimClients {
    this.clients = clients;
    this.fleet.open += 1;
    this.fleet.stats.connects += 1;
    return clients;
  }

  /** The connection for one call: per-check-in opens it when closed and closes it once idle. */
  private async withClients<T>(fn: (c: SimClients) => Promise<T>): Promise<T> {
    if (this.idle !== undefined) {
      clearTimeout(this.idle);
      this.idle = undefined;
    }
    const clients =
      this.clients ??
      this.open(
        new SimClients(
          this.fleet.server,
          credentials.createSsl(this.fleet.serverCa, Buffer.from(this.keyPem), Buffer.from(encodePem(this.certDer, 'CERTIFICATE'))),
        ),
      );
    this.inFlight += 1;
    try {
      return await fn(clients);
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0 && this.fleet.mode === 'per-check-in') this.idle = setTimeout(() => this.close(), this.fleet.idleCloseMs);
    }
  }

  /** Opens the device's connection now rather than at its first call (a persistent agent keeps one open). */
  connect(): void {
    this.clients?.device.getChannel().getConnectivityState(true);
  }

  /** Whether its connection is up (the TLS handshake done). */
  get connected(): boolean {
    return this.clients?.device.getChannel().getConnectivityState(false) === connectivityState.READY;
  }

  /** Authenticated empty call over the same mTLS connection (benchmark baseline). */
  async ping(stats: SimStats): Promise<void> {
    await this.withClients((c) => call((md, opts, cb) => c.device.ping({}, md, opts, cb)));
    stats.pings += 1;
  }

  async tick(stats: SimStats, cache: ComponentCache): Promise<void> {
    await this.withClients((c) => this.turn(c, stats, cache));
  }

  private async turn(clients: SimClients, stats: SimStats, cache: ComponentCache): Promise<void> {
    const res = await call<CheckInResponse>((md, opts, cb) => clients.device.checkIn({ inventory: INVENTORY }, md, opts, cb));
    stats.checkIns += 1;
    const listed = new Set(res.assignments.map((a) => a.transaction?.id ?? a.rolloutId));
    // A receipt whose answer was lost (the server went away mid-call) may have been accepted, and
    // then its assignment is no longer listed: like the agent's outbox, it is sent again from the
    // same bytes on the next turn whatever the check-in lists, and answered as a duplicate.
    for (const [key, bytes] of this.unsent) if (!listed.has(key)) await this.upload(clients, key, bytes, stats);
    for (const a of res.assignments) {
      const key = a.transaction?.id ?? a.rolloutId;
      if (this.done.has(key) || a.release === undefined) continue;
      let bytes = this.unsent.get(key);
      if (bytes === undefined) {
        const digests = await this.components(clients, a, cache);
        bytes = envelopeBytes(signReceipt(this.receipt(a, digests), this.key()));
        this.unsent.set(key, bytes);
      }
      await this.upload(clients, key, bytes, stats);
    }
  }

  /** The signing key, parsed when a receipt is signed (a device at rest keeps only its PEM). */
  private key(): PrivateKey {
    return parsePrivateKeyPem(this.keyPem);
  }

  private async upload(clients: SimClients, key: string, bytes: Uint8Array, stats: SimStats): Promise<void> {
    const r = await call<UploadReceiptResponse>((md, opts, cb) => clients.device.uploadReceipt({ envelope: Buffer.from(bytes) }, md, opts, cb));
    stats.receipts += 1;
    if (r.duplicate) stats.duplicates += 1;
    this.unsent.delete(key);
    this.done.add(key);
  }

  close(): void {
    if (this.idle !== undefined) clearTimeout(this.idle);
    this.idle = undefined;
    if (this.clients === undefined) return;
    this.clients.close();
    this.clients = undefined;
    this.fleet.open -= 1;
  }

  private components(clients: SimClients, a: Assignment, cache: ComponentCache): Promise<Map<string, Digest>> {
    const target = a.release!.envelopeTarget;
    let p = cache.get(target);
    if (p === undefined) {
      p = this.fetchComponents(clients, a);
      cache.set(target, p);
      p.catch(() => cache.delete(target));
    }
    return p;
  }

  /** The envelope over GetFile (checked against the assignment's digest), component -> digest. */
  private async fetchComponents(clients: SimClients, a: Assignment): Promise<Map<string, Digest>> {
    const target = a.release!.envelopeTarget;
    const digest = a.release!.envelopeDigest;
    if (!isDigest(digest)) throw new Error(`envelope ${target}: digest ${digest} is not sha256:<64 hex>`);
    const bytes = await readRepoFile(clients.repository, `targets/${hashedTargetPath(target, digestHex(digest))}`);
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
