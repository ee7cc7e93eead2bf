import type { Digest } from '@svc/release-core';
import type { ColumnType, Generated } from 'kysely';
import type { Int8, Timestamp } from './column-types.js';

/** Migration 0055 (docs/delta-updates.md). */
export interface MemberDeltasTable {
  id: Generated<string>;
  tenant_id: string;
  source_digest: ColumnType<Digest>;
  target_digest: ColumnType<Digest>;
  source_length: Int8;
  target_length: Int8;
  state: Generated<'queued' | 'building' | 'ready' | 'skipped' | 'failed'>;
  target_path: string | null;
  delta_digest: ColumnType<Digest> | null;
  delta_length: Int8 | null;
  build_ms: number | null;
  build_peak_rss_bytes: Int8 | null;
  attempts: Generated<number>;
  error: string | null;
  lease_owner: string | null;
  lease_until: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface DeploymentDeltasTable {
  deployment_id: string;
  delta_id: string;
  tenant_id: string;
  component: string;
  devices: number;
}

export interface ReceiptDeliveriesTable {
  receipt_id: string;
  tenant_id: string;
  deployment_id: string;
  device_name: string;
  component: string;
  method: 'full' | 'delta' | 'adaptive';
  bytes_transferred: Int8;
  full_length: Int8;
  source_digest: ColumnType<Digest> | null;
  fallback: string | null;
  /** Migration 0056: download attempts, resumed attempts, why the download did not complete. */
  attempts: number | null;
  resumes: number | null;
  failure: string | null;
  failure_detail: string | null;
  reported_at: Timestamp;
}

/** Migration 0057: bytes of an os-bundle the bundle port sent one device for one rollout. */
export interface BundleStreamsTable {
  rollout_id: string;
  device_name: string;
  tenant_id: string;
  deployment_id: string;
  bytes_sent: ColumnType<string | number, number | undefined, number>;
  requests: Generated<number>;
  ranged_requests: Generated<number>;
  first_at: Timestamp;
  last_at: Timestamp;
}

export interface DeltaTables {
  member_deltas: MemberDeltasTable;
  deployment_deltas: DeploymentDeltasTable;
  receipt_deliveries: ReceiptDeliveriesTable;
  bundle_streams: BundleStreamsTable;
}
