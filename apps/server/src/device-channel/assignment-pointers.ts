import { deploymentAssignments } from '../resources/rollouts/queries.js';
import type { Db } from '../store/tx.js';
import { SERVER_TUNING } from '../limits.js';
import type { AssignmentsPort, DeviceAssignment } from './ports.js';

/**
 * What a check-in tells a device to install, per deployment, kept in process memory. Every
 * device of a rollout is handed the same pointer (release or artifact, member rollouts), and
 * all of it is fixed when the deployment starts (rollouts `deploymentAssignments`), so it is
 * read once per deployment instead of three statements per check-in, and never goes stale:
 * nothing here needs invalidating. Whether a device has work in a deployment now (its own row,
 * the wave, the abort) is not kept: the check-in's statement reads it every time
 * (`checkInState`), so an abort, a wave opening, an accepted receipt or a new rollout shows at
 * the device's very next check-in, on every process.
 *
 * Bounded (SERVER_TUNING.assignmentPointerCacheEntries, the oldest read goes first); check-ins
 * arriving together for a deployment not yet cached share one read; a failed read or an id
 * not found is not kept.
 */
export class AssignmentPointers implements AssignmentsPort {
  private readonly byDeployment = new Map<string, Promise<DeviceAssignment | undefined>>();

  constructor(
    private readonly read: typeof deploymentAssignments = deploymentAssignments,
    private readonly maxEntries: number = SERVER_TUNING.assignmentPointerCacheEntries,
  ) {}

  /** Deployments read so far and still kept (tests). */
  get size(): number {
    return this.byDeployment.size;
  }

  async assignmentsOf(db: Db, deploymentIds: readonly string[]): Promise<DeviceAssignment[]> {
    if (deploymentIds.length === 0) return [];
    let read: Promise<Map<string, DeviceAssignment>> | undefined;
    const missing = deploymentIds.filter((id) => !this.byDeployment.has(id));
    if (missing.length > 0) read = this.read(db, missing);
    const each = deploymentIds.map((id) => {
      let p = this.byDeployment.get(id);
      if (p === undefined) {
        p = read!.then((m) => m.get(id));
        this.keep(id, p);
      }
      return p;
    });
    return (await Promise.all(each)).filter((a): a is DeviceAssignment => a !== undefined);
  }

  private keep(id: string, p: Promise<DeviceAssignment | undefined>): void {
    if (this.byDeployment.size >= this.maxEntries) this.byDeployment.delete(this.byDeployment.keys().next().value as string);
    this.byDeployment.set(id, p);
    const forget = () => {
      if (this.byDeployment.get(id) === p) this.byDeployment.delete(id);
    };
    p.then((a) => (a === undefined ? forget() : undefined), forget);
  }
}
