import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import type { ConnectionCertificates } from './connections.js';
import type { DeviceCredentialCache } from './credential-cache.js';
import type { DeviceCaStore } from './device-ca.js';
import type { EnrollmentBatcher } from './enroll-batch.js';
import type { LastSeenBuffer } from './last-seen.js';
import type { ChannelLogger } from './grpc-status.js';
import type { UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { PipelinePort, RepositoryPort } from './ports.js';
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
  pipeline: PipelinePort;
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
  /** Fault-injection seams for tests (never set by main.ts). */
  hooks?: { unitOfWork?: UnitOfWorkHooks };
}

export const CHANNEL_DEFAULTS = { checkInIntervalS: 60, certValidDays: 30, renewBeforeDays: 10 } as const;
