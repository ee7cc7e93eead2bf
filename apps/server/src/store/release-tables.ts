import type { Digest } from '@svc/release-core';
import type { ColumnType, Generated } from 'kysely';
import type { Int8, Json, Timestamp } from './column-types.js';

/**
 * Table interfaces of the publish-and-deploy pipeline (migration 0003_pipeline). Composed
 * into the server's `Database` in src/store/database.ts. Every row carries `tenant_id`.
 */

export interface AuthorizerKeysTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  keyid: string;
  public_key_pem: string;
  created_at: Timestamp;
  revoked_at: Timestamp | null;
}

export interface ArtifactsTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  version: string;
  kind: string;
  media_type: string;
  filename: string;
  digest: ColumnType<Digest>;
  length: Int8;
  target: string;
  source: Generated<string>;
  description: string | null;
  labels: ColumnType<Record<string, string>, string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ArtifactSbomsTable {
  artifact_id: string;
  tenant_id: string;
  format: string;
  content_type: string;
  bytes: Uint8Array;
  digest: ColumnType<Digest>;
  created_at: Timestamp;
}

export interface RegistriesTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  url: string;
  credentials_ref: string | null;
  created_at: Timestamp;
}

export interface DeviceGroupsTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  member_count: Generated<number>;
  snapshot_digest: ColumnType<Digest>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** set when the group is deleted (migration 0049); the row stays for the deployments naming it */
  deleted_at: Timestamp | null;
  /** a dynamic group's device filter (migration 0052); NULL for a static group */
  filter: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface DeviceGroupMembersTable {
  group_id: string;
  tenant_id: string;
  device_name: string;
}

export interface ReleasesTable {
  id: Generated<string>;
  tenant_id: string;
  product: string;
  version: string;
  payload_digest: ColumnType<Digest>;
  envelope_digest: ColumnType<Digest>;
  keyid: string;
  target: string;
  envelope_bytes: Uint8Array;
  created_at: Timestamp;
}

export interface DeploymentsTable {
  id: Generated<string>;
  tenant_id: string;
  kind: 'signed' | 'legacy';
  release_id: string | null;
  artifact_id: string | null;
  group_id: string;
  snapshot_digest: ColumnType<Digest>;
  member_count: number;
  device_count: number;
  /** terminal device results, kept in the receipt transaction so state reads never scan devices */
  n_committed: Generated<number>;
  n_rolled_back: Generated<number>;
  n_failed: Generated<number>;
  n_installed: Generated<number>;
  /** devices decommissioned while they owed a result (`skipped`) */
  n_skipped: Generated<number>;
  failure_threshold: Json<{ count?: number; percent?: number } | null> | null;
  aborted_at: Timestamp | null;
  created_at: Timestamp;
}

export interface RolloutsTable {
  id: Generated<string>;
  tenant_id: string;
  deployment_id: string;
  kind: 'signed' | 'legacy';
  release_id: string | null;
  artifact_id: string;
  component: string;
  group_index: number;
  position: number;
  created_at: Timestamp;
}

export interface DeploymentWavesTable {
  deployment_id: string;
  tenant_id: string;
  idx: number;
  name: string;
  size: number;
  requires_approval: boolean;
  state: string;
  done: Generated<number>;
  failed: Generated<number>;
  failures_acknowledged: Generated<number>;
  updated_at: Timestamp;
}

export interface DeploymentDevicesTable {
  deployment_id: string;
  tenant_id: string;
  device_name: string;
  wave_idx: number;
  state: Generated<string>;
  receipt_id: string | null;
  updated_at: Timestamp | null;
}

export interface ReleaseReceiptsTable {
  id: Generated<string>;
  tenant_id: string;
  deployment_id: string;
  release_id: string;
  rollout_id: string | null;
  device_name: string;
  activation: string;
  health: string;
  payload_digest: ColumnType<Digest>;
  envelope_digest: ColumnType<Digest>;
  envelope_bytes: Uint8Array;
  payload: Json<Record<string, unknown>>;
  label: Generated<string>;
  accepted_at: Timestamp;
}

export interface LegacyStatusReportsTable {
  id: Generated<string>;
  tenant_id: string;
  deployment_id: string;
  rollout_id: string;
  device_name: string;
  status: 'installed' | 'failed';
  detail: string | null;
  label: Generated<string>;
  reported_at: Timestamp;
}

export interface ReleaseTables {
  authorizer_keys: AuthorizerKeysTable;
  artifacts: ArtifactsTable;
  artifact_sboms: ArtifactSbomsTable;
  registries: RegistriesTable;
  device_groups: DeviceGroupsTable;
  device_group_members: DeviceGroupMembersTable;
  releases: ReleasesTable;
  deployments: DeploymentsTable;
  rollouts: RolloutsTable;
  deployment_waves: DeploymentWavesTable;
  deployment_devices: DeploymentDevicesTable;
  release_receipts: ReleaseReceiptsTable;
  legacy_status_reports: LegacyStatusReportsTable;
}
