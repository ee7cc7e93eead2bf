import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** bigint columns read as text by node-postgres, as numbers by PGlite. */
type BigInt = ColumnType<string | number, number, number>;

/** Migration 0055 (docs/delta-updates.md). */
export interface MemberDeltasTable {
  id: Generated<string>;
  tenant_id: string;
  source_digest: string;
  target_digest: string;
  source_length: BigInt;
  target_length: BigInt;
  state: Generated<'queued' | 'building' | 'ready' | 'skipped' | 'failed'>;
  target_path: string | null;
  delta_digest: string | null;
  delta_length: BigInt | null;
  build_ms: number | null;
  build_peak_rss_bytes: BigInt | null;
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
  bytes_transferred: BigInt;
  full_length: BigInt;
  source_digest: string | null;
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
