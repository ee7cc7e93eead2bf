import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_core.js';
import * as m0002 from './0002_devices.js';
import * as m0003 from './0003_audit.js';
import * as m0004 from './0004_device_channel.js';
import * as m0005 from './0005_signing_repo.js';
import * as m0006 from './0006_pipeline.js';
import * as m0007 from './0007_device_list_perf.js';
import * as m0008 from './0008_device_list_json.js';
import * as m0009 from './0009_credential_notify.js';
import * as m0010 from './0010_device_list_versions.js';
import * as m0012 from './0012_vulnerabilities.js';
import * as m0013 from './0013_vuln_bulk_writes.js';
import * as m0020 from './0020_article14_cases.js';
import * as m0035 from './0035_device_heartbeats.js';
import * as m0036 from './0036_device_ca_notify.js';
import * as m0041 from './0041_receipts_by_device.js';
import * as m0042 from './0042_device_credential_notify.js';
import * as m0043 from './0043_rollout_skipped_devices.js';
import * as m0044 from './0044_receipt_software_per_statement.js';
import * as m0045 from './0045_vuln_matching_details.js';
import * as m0046 from './0046_evidence_keys.js';
import * as m0047 from './0047_case_srp_packets.js';
import * as m0048 from './0048_device_ca_rotation.js';
import * as m0049 from './0049_group_delete.js';
import * as m0050 from './0050_wrapped_keys.js';
import * as m0051 from './0051_blobs.js';
import * as m0052 from './0052_device_inventory.js';
import * as m0053 from './0053_bulk_logs.js';
import * as m0054 from './0054_tuf_key_rotations.js';
import * as m0055 from './0055_member_deltas.js';
import * as m0056 from './0056_delivery_resume.js';
import * as m0057 from './0057_bundle_streams.js';
import * as m0058 from './0058_delivery_indexes.js';

/**
 * The ONE forward-only migration set of the server, in order. To add a migration: create
 * `NNNN_name.ts` exporting `up(db)` (next free number, never renumber or edit a shipped
 * one) and add one line here. Names sort lexically, so keep the 4-digit prefix.
 */
export const migrations: Record<string, Migration> = {
  '0001_core': m0001,
  '0002_devices': m0002,
  '0003_audit': m0003,
  '0004_device_channel': m0004,
  '0005_signing_repo': m0005,
  '0006_pipeline': m0006,
  '0007_device_list_perf': m0007,
  '0008_device_list_json': m0008,
  '0009_credential_notify': m0009,
  '0010_device_list_versions': m0010,
  '0012_vulnerabilities': m0012,
  '0013_vuln_bulk_writes': m0013,
  '0020_article14_cases': m0020,
  '0035_device_heartbeats': m0035,
  '0036_device_ca_notify': m0036,
  '0041_receipts_by_device': m0041,
  '0042_device_credential_notify': m0042,
  '0043_rollout_skipped_devices': m0043,
  '0044_receipt_software_per_statement': m0044,
  '0045_vuln_matching_details': m0045,
  '0046_evidence_keys': m0046,
  '0047_case_srp_packets': m0047,
  '0048_device_ca_rotation': m0048,
  '0049_group_delete': m0049,
  '0050_wrapped_keys': m0050,
  '0051_blobs': m0051,
  '0052_device_inventory': m0052,
  '0053_bulk_logs': m0053,
  '0054_tuf_key_rotations': m0054,
  '0055_member_deltas': m0055,
  '0056_delivery_resume': m0056,
  '0057_bundle_streams': m0057,
  '0058_delivery_indexes': m0058,
};
