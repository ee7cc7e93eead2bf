import type { Generated } from 'kysely';
import type { GeneratedTimestamp, Timestamp } from '../store/column-types.js';

/**
 * Tables of the device channel (migration 0004_device_channel). The device row itself
 * (status, last_seen, cert_fingerprint, cert_not_after) is the platform's `devices` table.
 */
export interface DeviceCasTable {
  /** A tenant's device CAs (migrations 0004, 0048): the certificate is here so every server process agrees on it. */
  tenant_id: string;
  /** 1 for the tenant's first CA, one more at each rotation. */
  seq: Generated<number>;
  cert_der: Uint8Array;
  /** File name of the PKCS#8 key under SVC_DATA_DIR/ca/<tenant>/ (shared through the data dir); a retired CA's may be gone. */
  key_file: string;
  created_at: GeneratedTimestamp;
  /** NULL for the one current CA (it issues); set when a rotation replaced it. */
  retired_at: Timestamp | null;
  /** A retired CA is trusted for verification until then (its last certificate's expiry). */
  trusted_until: Timestamp | null;
  /** Who retired it (`system:key-recovery`). */
  retired_by: string | null;
}

/** Append-only log of every device certificate issued (enrollment and renewal). */
export interface DeviceCertificatesTable {
  id: Generated<string>;
  tenant_id: string;
  device_name: string;
  serial: string;
  fingerprint: string;
  not_after: Timestamp;
  reason: string;
  issued_at: Timestamp;
}

export interface DeviceChannelTables {
  device_cas: DeviceCasTable;
  device_certificates: DeviceCertificatesTable;
}
