import type { ArtifactRecord, GroupRecord } from './rest-client.js';

export interface PayloadComponent {
  /** Component name (what `activation.ordered_groups` lists). */
  name: string;
  artifact: ArtifactRecord;
  /** File placement on the device (model, config, service-binary). */
  placement?: { path: string; mode?: string; owner?: string; group?: string };
}

/** `group`: index in `orderedGroups`; the probe runs once that group is live (else after every group). */
export type HealthProbe =
  | { name: string; type: 'command'; command: string[]; timeout_s: number; group?: number }
  | { name: string; type: 'http'; url: string; expect_status?: number; timeout_s: number; group?: number };

export interface PayloadOptions {
  tenant: string;
  product: string;
  version: string;
  components: PayloadComponent[];
  /** Component names, one inner array per activation group (contracts §2). */
  orderedGroups: string[][];
  group: GroupRecord;
  probes: HealthProbe[];
  profiles?: string[];
  waves?: { name?: string; count?: number; percent?: number; requires_approval?: boolean }[];
}

/**
 * An `svc.release.v1` payload (contracts §2) for artifacts published through the REST API:
 * every component bound to its artifact record and TUF target, the group's snapshot digest
 * copied into `rollout.target_policy_digest` (spec §2.1), rollback at release boundary.
 */
export function releasePayload(o: PayloadOptions): Record<string, unknown> {
  return {
    tenant: o.tenant,
    product: o.product,
    release: { version: o.version },
    components: o.components.map((c) => ({
      name: c.name,
      kind: c.artifact.kind,
      artifact: { id: c.artifact.id, name: c.artifact.name, version: c.artifact.version },
      target: c.artifact.target,
      digest: c.artifact.digest,
      length: c.artifact.length,
      media_type: c.artifact.media_type,
      ...(c.placement ? { placement: { mode: '0644', ...c.placement } } : {}),
    })),
    targets: Object.fromEntries(
      o.components.map((c) => [c.artifact.target, { length: c.artifact.length, hashes: { sha256: c.artifact.digest.slice('sha256:'.length) } }]),
    ),
    compatibility: { profiles: o.profiles ?? ['linux-arm64'] },
    activation: { ordered_groups: o.orderedGroups },
    health: { probes: o.probes, timeout_s: 60 },
    rollout: { target_group: o.group.id, target_policy_digest: o.group.snapshot_digest, ...(o.waves ? { waves: o.waves } : {}) },
    approvals: [],
    // spec §2.1: a multi-component Linux release must roll back at the release boundary
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2020-01-01T00:00:00Z', not_after: '2099-01-01T00:00:00Z', max_offline_age_s: 2592000 },
  };
}
