import type { Assignment, CheckInResponse, UploadReceiptResponse } from '@svc/device-proto';
import {
  buildReceiptPayload,
  digestHex,
  envelopeBytes,
  hashedTargetPath,
  isDigest,
  privateKeyFromPkcs8Der,
  sha256Digest,
  signReceipt,
  type Digest,
  type PrivateKey,
  type ReceiptPayload,
} from '@svc/release-core';
import { DeviceServiceService, RepositoryServiceService } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { SIM_INVENTORY } from './clients.js';
import type { IdentityArena } from './identity-arena.js';
import type { LatencyHistogram } from './latency.js';
import { keyPemFromScalar, pkcs8FromScalar } from './sim-key.js';
import { WireConnection, type ServerPin } from './wire.js';

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
  pin: ServerPin;
  mode: 'persistent' | 'per-check-in';
  idleCloseMs: number;
  stats: SimStats;
  /** Connections open now. */
  open: number;
  /** Every device's identity, by index. */
  arena: IdentityArena;
  prefix: string;
  /**
   * How long calls took that succeeded: `checkIn` from a check-in's start to its answer (in
   * per-check-in mode with the connection closed, the TLS handshake included), `ping` the
   * authenticated Ping.
   */
  latency: { checkIn: LatencyHistogram; ping: LatencyHistogram };
}

/**
 * One simulated device: its own P-256 key and certificate (in the fleet's IdentityArena), its
 * own mTLS connection (wire.ts), the real protocol. It "installs" with an in-memory fake
 * (nothing is placed) but signs and uploads a real receipt for every signed assignment.
 *
 * `persistent`: the connection (which holds an OpenSSL context of its own) lives from
 * `connect()` to the end, and is made again at the next call if the server ended it.
 * `per-check-in`: like the agent's default, a turn connects, and the connection closes after
 * `idleCloseMs` without a call; at rest a device is this small object and its arena entry
 * (private scalar, certificate DER, tenant); PEM and the OpenSSL context are made per
 * connection, receipt bookkeeping only once it has any.
 */
export class SimDevice {
  private conn: WireConnection | undefined;
  private inFlight = 0;
  private idle: NodeJS.Timeout | undefined;
  private done: Set<string> | undefined;
  /** Signed receipts not yet acknowledged: retried from these exact bytes (spec §2.3 rule 2). */
  private unsent: Map<string, Uint8Array> | undefined;

  constructor(
    readonly index: number,
    private readonly fleet: SimFleet,
  ) {}

  get name(): string {
    return simDeviceName(this.fleet.prefix, this.index);
  }

  private open(): WireConnection {
    const conn = connectAs(this.fleet, this.index, () => {
      if (this.conn === conn) this.conn = undefined;
      this.fleet.open -= 1;
    });
    this.conn = conn;
    this.fleet.open += 1;
    this.fleet.stats.connects += 1;
    return conn;
  }

  /** The connection for one call: opened when there is none (or the server ended it); per-check-in closes it once idle. */
  private async withConnection<T>(fn: (c: WireConnection) => Promise<T>): Promise<T> {
    if (this.idle !== undefined) {
      clearTimeout(this.idle);
      this.idle = undefined;
    }
    const conn = this.conn ?? this.open();
    this.inFlight += 1;
    try {
      return await fn(conn);
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0 && this.fleet.mode === 'per-check-in') this.idle = setTimeout(() => this.close(), this.fleet.idleCloseMs);
    }
  }

  /** Opens the device's connection now rather than at its first call (a persistent agent keeps one open). */
  connect(): void {
    this.conn ??= this.open();
  }

  /** Whether its connection is up (the TLS handshake done, the server checked). */
  get connected(): boolean {
    return this.conn?.usable === true;
  }

  /** Authenticated empty call over the same mTLS connection (benchmark baseline). */
  async ping(stats: SimStats): Promise<void> {
    const t0 = performance.now();
    await this.withConnection((c) => c.unary(DeviceServiceService.ping, {}));
    this.fleet.latency.ping.record(performance.now() - t0);
    stats.pings += 1;
  }

  async tick(stats: SimStats, cache: ComponentCache): Promise<void> {
    await this.withConnection((c) => this.turn(c, stats, cache));
  }

  private async turn(conn: WireConnection, stats: SimStats, cache: ComponentCache): Promise<void> {
    const t0 = performance.now();
    const res: CheckInResponse = await conn.unary(DeviceServiceService.checkIn, { inventory: SIM_INVENTORY });
    this.fleet.latency.checkIn.record(performance.now() - t0);
    stats.checkIns += 1;
    const listed = new Set(res.assignments.map((a) => a.transaction?.id ?? a.rolloutId));
    // A receipt whose answer was lost (the server went away mid-call) may have been accepted, and
    // then its assignment is no longer listed: like the agent's outbox, it is sent again from the
    // same bytes on the next turn whatever the check-in lists, and answered as a duplicate.
    if (this.unsent !== undefined) for (const [key, bytes] of this.unsent) if (!listed.has(key)) await this.upload(conn, key, bytes, stats);
    for (const a of res.assignments) {
      const key = a.transaction?.id ?? a.rolloutId;
      if (this.done?.has(key) === true || a.release === undefined) continue;
      let bytes = this.unsent?.get(key);
      if (bytes === undefined) {
        const digests = await this.components(conn, a, cache);
        bytes = envelopeBytes(signReceipt(this.receipt(a, digests), this.key()));
        (this.unsent ??= new Map()).set(key, bytes);
      }
      await this.upload(conn, key, bytes, stats);
    }
  }

  /** The signing key, made from the arena's scalar when a receipt is signed. */
  private key(): PrivateKey {
    return privateKeyFromPkcs8Der(pkcs8FromScalar(this.fleet.arena.scalar(this.index)));
  }

  private async upload(conn: WireConnection, key: string, bytes: Uint8Array, stats: SimStats): Promise<void> {
    const r: UploadReceiptResponse = await conn.unary(DeviceServiceService.uploadReceipt, { envelope: Buffer.from(bytes) });
    stats.receipts += 1;
    if (r.duplicate) stats.duplicates += 1;
    this.unsent?.delete(key);
    (this.done ??= new Set()).add(key);
  }

  close(): void {
    if (this.idle !== undefined) clearTimeout(this.idle);
    this.idle = undefined;
    this.conn?.close(); // its onEnd forgets it and counts it closed
  }

  private components(conn: WireConnection, a: Assignment, cache: ComponentCache): Promise<Map<string, Digest>> {
    const target = a.release!.envelopeTarget;
    let p = cache.get(target);
    if (p === undefined) {
      p = this.fetchComponents(conn, a);
      cache.set(target, p);
      p.catch(() => cache.delete(target));
    }
    return p;
  }

  /** The envelope over GetFile (checked against the assignment's digest), component -> digest. */
  private async fetchComponents(conn: WireConnection, a: Assignment): Promise<Map<string, Digest>> {
    const target = a.release!.envelopeTarget;
    const digest = a.release!.envelopeDigest;
    if (!isDigest(digest)) throw new Error(`envelope ${target}: digest ${digest} is not sha256:<64 hex>`);
    const chunks = await conn.serverStream(RepositoryServiceService.getFile, {
      path: `targets/${hashedTargetPath(target, digestHex(digest))}`,
      offset: 0,
      length: 0,
    });
    const bytes = Buffer.concat(chunks.map((c) => c.data));
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
      tenant: this.fleet.arena.tenant(this.index),
      device: { name: this.name, certificateDer: new Uint8Array(this.fleet.arena.certDer(this.index)) },
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

/** A connection as simulated device `index` of the fleet's arena (its key and certificate), to the fleet's server, checked against its pin. */
export function connectAs(fleet: Pick<SimFleet, 'server' | 'pin' | 'arena'>, index: number, onEnd?: () => void): WireConnection {
  return new WireConnection({
    address: fleet.server,
    keyPem: keyPemFromScalar(fleet.arena.scalar(index)),
    certPem: encodePem(fleet.arena.certDer(index), 'CERTIFICATE'),
    pin: fleet.pin,
    ...(onEnd === undefined ? {} : { onEnd }),
  });
}

/** `<prefix>-NNNNNN`: the name of simulated device `index`. */
export function simDeviceName(prefix: string, index: number): string {
  return `${prefix}-${String(index).padStart(6, '0')}`;
}
