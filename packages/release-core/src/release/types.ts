import type { Digest } from '../digest.js';

export const RELEASE_PAYLOAD_TYPE = 'svc.release.v1';

/*
 * Component kinds (contracts §2), composed from one base list. Each list has one meaning and one
 * name: MEMBER_KINDS (transaction members, the base), COMPONENT_KINDS (what a release may carry
 * and a device installs: the members plus the standalone OS bundle), ARTIFACT_KINDS (what an
 * artifact may be published as: every component kind plus the kinds refused as members).
 */

/** contracts §2: component kinds that may be members of a rollback transaction (spec §2.1 rule 1). */
export const MEMBER_KINDS = Object.freeze(['container', 'model', 'config', 'service-binary'] as const);
/** spec §2.1 rule 3: a standalone release boundary. */
export const OS_BUNDLE_KIND = 'os-bundle';
export const RAUC_MEDIA_TYPE = 'application/vnd.rauc.bundle';
/** contracts §2: kinds refused as members (spec §2.1 rule 2). */
export const REFUSED_KINDS = Object.freeze(['maintenance-window', 'min-agent', 'compose', 'os-package', 'package-manager'] as const);
/** Kinds a release component may have: the members and the OS bundle (which stands alone). */
export const COMPONENT_KINDS = Object.freeze([...MEMBER_KINDS, OS_BUNDLE_KIND] as const);
/** Kinds an artifact may be published as: every component kind and every refused kind. */
export const ARTIFACT_KINDS = Object.freeze([...COMPONENT_KINDS, ...REFUSED_KINDS] as const);

export type MemberKind = (typeof MEMBER_KINDS)[number];
export type ComponentKind = (typeof COMPONENT_KINDS)[number];
export type RefusedKind = (typeof REFUSED_KINDS)[number];
export type ArtifactKind = (typeof ARTIFACT_KINDS)[number];

export interface Placement {
  /** absolute POSIX path the file is placed at */
  path: string;
  /** octal permission bits, e.g. "0644" */
  mode?: string;
  owner?: string;
  group?: string;
}

export interface Component {
  name: string;
  kind: ComponentKind;
  artifact: { id: string; name: string; version: string };
  /** TUF target path of the artifact */
  target: string;
  digest: Digest;
  length: number;
  media_type: string;
  placement?: Placement;
}

export interface TargetDescriptor {
  length: number;
  hashes: { sha256: string };
}

/** `group`: index in `activation.ordered_groups`; the probe runs once that group is live. */
export type HealthProbe =
  | { name: string; type: 'command'; command: string[]; timeout_s: number; group?: number }
  | { name: string; type: 'http'; url: string; timeout_s: number; expect_status?: number; group?: number };

export interface HealthPolicy {
  probes: HealthProbe[];
  /** overall budget for one group's probes; default: sum of probe timeouts */
  timeout_s?: number;
}

export interface Wave {
  name?: string;
  /** cumulative share of the target group reached by the end of this wave */
  percent?: number;
  /** cumulative device count reached by the end of this wave */
  count?: number;
  requires_approval?: boolean;
}

/** A wave pauses when its failures exceed either bound (strictly more than allowed). */
export interface FailureThreshold {
  /** failed devices of one wave */
  count?: number;
  /** failed devices as a percent of the wave's size */
  percent?: number;
}

export interface RolloutConstraints {
  target_group: string;
  target_policy_digest: Digest;
  waves?: Wave[];
  failure_threshold?: FailureThreshold;
}

export interface ReleasePayload {
  tenant: string;
  product: string;
  release: { version: string; name?: string };
  components: Component[];
  targets: Record<string, TargetDescriptor>;
  compatibility: { profiles: string[] };
  activation: { ordered_groups: string[][] };
  health: HealthPolicy;
  rollout: RolloutConstraints;
  approvals: { system: string; ref: string; digest?: Digest }[];
  recovery: { on_failure: 'rollback' | 'halt'; rollback_boundary: 'release' | 'component' };
  attestations: { predicate_type: string; digest: Digest }[];
  validity: { not_before: string; not_after: string; max_offline_age_s: number };
}
