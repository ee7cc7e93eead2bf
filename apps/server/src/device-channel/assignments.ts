import { AssignmentKind, type Assignment } from '@svc/device-proto';
import type { DeviceAssignment } from './ports.js';

/** The rollouts resource's DeviceAssignment as the wire message (field for field). */
export function toProtoAssignment(a: DeviceAssignment): Assignment {
  return {
    rolloutId: a.rollout_id,
    kind: a.kind === 'signed' ? AssignmentKind.ASSIGNMENT_KIND_SIGNED : AssignmentKind.ASSIGNMENT_KIND_LEGACY,
    release:
      a.release === undefined
        ? undefined
        : {
            releaseId: a.release.release_id,
            product: a.release.product,
            version: a.release.version,
            envelopeTarget: a.release.envelope_target,
            envelopeDigest: a.release.envelope_digest,
            payloadDigest: a.release.payload_digest,
          },
    transaction:
      a.transaction === undefined
        ? undefined
        : {
            id: a.transaction.id,
            memberCount: a.transaction.member_count,
            members: a.transaction.members.map((m) => ({ rolloutId: m.rollout_id, component: m.component, group: m.group, position: m.position })),
          },
    legacy:
      a.legacy === undefined
        ? undefined
        : {
            artifactId: a.legacy.artifact_id,
            name: a.legacy.name,
            version: a.legacy.version,
            kind: a.legacy.kind,
            target: a.legacy.target,
            digest: a.legacy.digest,
            length: a.legacy.length,
          },
  };
}
