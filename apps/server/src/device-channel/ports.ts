import type { DeviceAssignment } from '../resources/rollouts/queries.js';
import type { Db } from '../store/tx.js';

/**
 * What the device channel needs from its neighbours, typed here once. The real
 * implementations are the rollouts resource's `deploymentAssignments`, kept per deployment by
 * `AssignmentPointers` (assignment-pointers.ts; seam in docs/device-channel.md) and the signing repository's `openRepoFile`; wiring.ts binds them,
 * tests bind the same real ones. Every change a device makes (enrollment, renewal, check-in,
 * log upload, receipt, legacy report) is a command of its resource, run by the handler as the
 * device (execute.ts).
 */

/** Rollouts seam: the assignment type is the rollouts resource's own (resources/rollouts/queries.ts). */
export type { DeviceAssignment };

export interface AssignmentsPort {
  /** The assignments of these deployments, in this order (ids from the check-in's statement: `checkInState`). */
  assignmentsOf(db: Db, deploymentIds: readonly string[]): Promise<DeviceAssignment[]>;
}

/** A file of the tenant's signing repository (the shape of signing-repo's RepoFile). */
export interface RepoFile {
  stream: AsyncIterable<Uint8Array>;
  /** Bytes in `stream` (the range length when a range was asked for). */
  length: number;
  /** Length of the whole file. */
  totalLength: number;
}

export type RepoRange = { kind: 'from-to'; start: number; end: number } | { kind: 'from'; start: number } | { kind: 'suffix'; length: number };

export interface RepositoryPort {
  /** `metadata/<file>` or `targets/<hash-prefixed path>`; throws a NOT_FOUND-mapped error when absent. */
  openRepoFile(tenantId: string, path: string, range?: RepoRange): Promise<RepoFile>;
}
