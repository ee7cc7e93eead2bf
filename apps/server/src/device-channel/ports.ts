import type { Kysely } from 'kysely';
import type { DeviceAssignment } from '../pipeline/device-api.js';
import type { Database } from '../store/database.js';

/**
 * What the device channel needs from its neighbours, typed here once. The real
 * implementations are the pipeline's `device-api.ts` (seam in docs/device-channel.md) and the
 * signing repository's `openRepoFile`; wiring.ts binds them, tests bind the same real ones.
 */

/** Pipeline seam: the assignment type is the pipeline's own (apps/server/src/pipeline/device-api.ts). */
export type { DeviceAssignment };

export interface PipelinePort {
  listAssignments(db: Kysely<Database>, tenantId: string, deviceName: string, now: Date): Promise<DeviceAssignment[]>;
  acceptReceipt(
    db: Kysely<Database>,
    tenantId: string,
    args: { deviceName: string; connectionCertificateDer: Uint8Array; envelopeBytes: Uint8Array; now: Date },
  ): Promise<{ receipt_id: string; duplicate: boolean }>;
  reportLegacyStatus(
    db: Kysely<Database>,
    tenantId: string,
    args: { deviceName: string; rolloutId: string; status: 'installed' | 'failed'; detail?: string; now: Date },
  ): Promise<void>;
}

/** A file of the tenant's signing repository (the shape of signing-repo's RepoFile). */
export interface RepoFile {
  stream: AsyncIterable<Uint8Array>;
  /** Bytes in `stream` (the range length when a range was asked for). */
  length: number;
  /** Length of the whole file. */
  totalLength: number;
}

export type RepoRange = { kind: 'from-to'; start: number; end: number } | { kind: 'from'; start: number };

export interface RepositoryPort {
  /** `metadata/<file>` or `targets/<hash-prefixed path>`; throws a NOT_FOUND-mapped error when absent. */
  openRepoFile(tenantId: string, path: string, range?: RepoRange): Promise<RepoFile>;
}
