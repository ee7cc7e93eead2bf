import type { ColumnType, Generated } from 'kysely';

/**
 * Table interfaces of the platform area (tenants, users, credentials, devices, enrollment
 * tokens, audit, branding). Other areas declare theirs in their own file and
 * `database.ts` composes them. Every row carries `tenant_id` (uuid).
 */

/** A timestamptz column: read as Date, written as Date or an SQL expression. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A timestamptz column with a database default. */
export type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A jsonb column: read as parsed JSON, written as a JSON string. */
export type Json<T = unknown> = ColumnType<T, string, string>;

export interface TenantsTable {
  id: Generated<string>;
  name: string;
  is_default: boolean;
  created_at: GeneratedTimestamp;
}

export interface UsersTable {
  id: Generated<string>;
  tenant_id: string;
  email: string;
  display_name: string;
  role: string;
  password_hash: string;
  created_at: GeneratedTimestamp;
}

export interface SessionsTable {
  id: Generated<string>;
  tenant_id: string;
  user_id: string;
  token_hash: string;
  created_at: GeneratedTimestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
}

export interface ApiKeysTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  role: string;
  prefix: string;
  key_hash: string;
  created_by: string | null;
  created_at: GeneratedTimestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface DevicesTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  status: string;
  profile: string | null;
  agent_version: string | null;
  last_seen: Timestamp | null;
  cert_fingerprint: string | null;
  cert_not_after: Timestamp | null;
  created_at: GeneratedTimestamp;
  updated_at: GeneratedTimestamp;
}

/** Kept by triggers on `devices`; read instead of counting rows per request. */
export interface DeviceCountsTable {
  tenant_id: string;
  status: string;
  n: ColumnType<number, number, number>;
}

export interface DeviceHistoryTable {
  id: Generated<string>;
  tenant_id: string;
  device_id: string;
  at: GeneratedTimestamp;
  event: string;
  detail: Json<Record<string, unknown>>;
}

export interface LogRequestsTable {
  id: Generated<string>;
  tenant_id: string;
  device_id: string;
  status: string;
  requested_by: string | null;
  created_at: GeneratedTimestamp;
  fulfilled_at: Timestamp | null;
  content_type: string | null;
  content: Uint8Array | null;
}

export interface EnrollTokensTable {
  id: Generated<string>;
  tenant_id: string;
  name: string;
  secret_hash: string;
  prefix: string;
  max_uses: number;
  uses: Generated<number>;
  expires_at: Timestamp;
  created_by: string | null;
  created_at: GeneratedTimestamp;
}

export interface AuditEventsTable {
  id: Generated<string>;
  seq: ColumnType<string, never, never>;
  tenant_id: string;
  at: GeneratedTimestamp;
  actor: string;
  credential: string;
  action: string;
  target: string;
  request_id: string | null;
  detail: Json<Record<string, unknown>>;
}

export interface BrandingTable {
  tenant_id: string;
  company_name: string;
  primary_color: string;
  accent_color: string;
  logo_data_url: string | null;
  updated_at: GeneratedTimestamp;
}

export interface CoreTables {
  tenants: TenantsTable;
  users: UsersTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  devices: DevicesTable;
  device_counts: DeviceCountsTable;
  device_history: DeviceHistoryTable;
  log_requests: LogRequestsTable;
  enroll_tokens: EnrollTokensTable;
  audit_events: AuditEventsTable;
  branding: BrandingTable;
}
