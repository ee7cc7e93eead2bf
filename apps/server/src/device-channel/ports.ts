import type { Kysely } from 'kysely';
import type { DeviceAssignment } from '../resources/rollouts/queries.js';
import type { Database } from '../store/database.js';
import type { Db } from '../store/tx.js';

/**
 * What the device channel needs from its neighbours, typed here once. The real
 * implementations are the rollouts resource's `listAssignments` (seam in
 * docs/device-channel.md), the signing repository's `openRepoFile` and the platform's
 * `consumeEnrollToken`; wiring.ts binds them, tests bind the same real ones. Receipts and
 * legacy status reports are commands of their resources, run by the handlers as the device.
 */

/** Rollouts seam: the assignment type is the rollouts resource's own (resources/rollouts/queries.ts). */
export type { DeviceAssignment };

export interface PipelinePort {
  listAssignments(db: Db, tenantId: string, deviceName: string, now: Date): Promise<DeviceAssignment[]>;
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

export interface EnrollPort {
  /** Consumes one use of the token atomically; throws ENROLL_TOKEN_* ServerErrors. */
  consumeEnrollToken(db: Kysely<Database>, secret: string, now: Date): Promise<{ tenantId: string; tokenId: string }>;
}
