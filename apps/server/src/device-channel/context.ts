import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import type { ConnectionAdmission } from './admission.js';
import type { ConnectionCertificates } from './connections.js';
import type { DeviceCredentialCache } from './credential-cache.js';
import type { DeviceCaStore } from './device-ca.js';
import type { EnrollmentBatcher } from './enroll-batch.js';
import type { LastSeenBuffer } from './last-seen.js';
import type { ChannelLogger } from './grpc-status.js';
import type { UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { AssignmentsPort, RepositoryPort } from './ports.js';
import type { ReceiptPipeline } from './receipt-pipeline.js';

/** Everything a device-channel handler reads; built once per server process (wiring.ts). */
export interface DeviceChannelContext {
  db: Kysely<Database>;
  cas: DeviceCaStore;
  /** Device authentications remembered, cleared by the database's change notifications (peer.ts). */
  credentials: DeviceCredentialCache;
  /** The client certificate of each live connection, as its handshake decoded it (connections.ts). */
  connections: ConnectionCertificates;
  /** Enrollment units of work, group-committed. */
  enrollments: EnrollmentBatcher;
  /** Heartbeats of devices whose check-in changes nothing else, written once a second. */
  lastSeen: LastSeenBuffer;
  /** The server CA devices pin at enrollment (DER). */
  serverCaDer: Uint8Array;
  assignments: AssignmentsPort;
  /** Receipt acceptance: verified per call, appended in batches (receipt-pipeline.ts). */
  receipts: ReceiptPipeline;
  repository: RepositoryPort;
  now: () => Date;
  log: ChannelLogger;
  /** Heartbeat period the server asks devices for. */
  checkInIntervalS: number;
  /** Lifetime of a device certificate. */
  certValidDays: number;
  /** Check-in asks for renewal when fewer days than this are left. */
  renewBeforeDays: number;
  /** Connections admitted at once, and the wait told to those beyond (admission.ts). */
  admission: ConnectionAdmission;
  /** Fault-injection seams for tests (never set by main.ts). */
  hooks?: { unitOfWork?: UnitOfWorkHooks };
}

/**
 * The device channel's defaults and bounds, in one place (settings override the first ones:
 * docs/server.md).
 * - `maxConnections`: device connections one process holds at once (`SVC_DEVICE_MAX_CONNECTIONS`).
 *   About 68 KiB of RSS each (docs/device-channel.md), so 10k is about 680 MiB; with agents
 *   connecting per check-in, a process holds about check-in rate x (call time + the agent's 30 s
 *   idle close), i.e. 10k covers about 300 check-ins/s.
 * - `retryAfterMs`: what a refused device is told to wait before it connects again
 *   (`SVC_DEVICE_RETRY_AFTER_S`); the agent adds up to half of it again at random.
 * - `refusedLingerMs`: a refused connection that sends no call is closed after this long.
 */
export const CHANNEL_DEFAULTS = {
  checkInIntervalS: 60,
  certValidDays: 30,
  renewBeforeDays: 10,
  maxConnections: 10_000,
  retryAfterMs: 30_000,
  refusedLingerMs: 5_000,
} as const;
