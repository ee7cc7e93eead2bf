import type { Digest } from '@svc/release-core';
import type { ColumnType, Generated } from 'kysely';
import type { Json, Timestamp } from './column-types.js';

/**
 * Table interfaces of vulnerability intelligence (migration 0012_vulnerabilities, columns of 0045). Composed
 * into the server's `Database` in src/store/database.ts. Feed tables are global; the others
 * carry `tenant_id`.
 */

/** A range an import stored that matching skips: the record, its package key, the range type and why. */
export interface RangeSkip {
  record: string;
  package: string;
  range_type: string;
  reason: string;
}

export interface VulnImportsTable {
  id: Generated<string>;
  kind: 'osv' | 'kev';
  source: string;
  digest: ColumnType<Digest>;
  state: 'running' | 'completed';
  entries_total: number;
  entries_done: Generated<number>;
  added: Generated<number>;
  updated: Generated<number>;
  unchanged: Generated<number>;
  skipped: Generated<number>;
  skipped_detail: ColumnType<{ entry: string; reason: string }[], string | undefined, string>;
  /** ranges of the written records that matching cannot evaluate (migration 0045) */
  ranges_skipped: Generated<number>;
  ranges_skipped_detail: ColumnType<RangeSkip[], string | undefined, string>;
  catalog_version: string | null;
  released_at: Timestamp | null;
  tenant_id: string;
  actor: string;
  started_at: Timestamp;
  updated_at: Timestamp;
  completed_at: Timestamp | null;
}

export interface VulnAdvisoriesTable {
  id: string;
  vuln_key: string;
  aliases: string[];
  modified: Timestamp;
  published: Timestamp | null;
  withdrawn: Timestamp | null;
  summary: string | null;
  severity: string;
  severity_source: string;
  cvss_score: number | null;
  cvss_vector: string | null;
  affected: Json<unknown[]>;
  import_id: string | null;
  updated_at: Timestamp;
}

export interface VulnAffectedPackagesTable {
  package_key: string;
  advisory_id: string;
}

export interface VulnIdsTable {
  id: string;
  advisory_id: string;
  vuln_key: string;
}

export interface VulnKevTable {
  cve_id: string;
  vendor_project: string;
  product: string;
  vulnerability_name: string;
  date_added: string;
  due_date: string | null;
  known_ransomware: string | null;
  catalog_version: string;
  import_id: string;
  removed_at: Timestamp | null;
}

export interface SbomComponentsTable {
  tenant_id: string;
  artifact_id: string;
  ordinal: number;
  purl: string;
  package_key: string;
  ecosystem: string | null;
  release: string | null;
  name: string;
  version: string | null;
  licenses: string[];
  hashes: Json<Record<string, string>>;
}

export interface VulnFindingsTable {
  id: Generated<string>;
  tenant_id: string;
  artifact_id: string;
  vuln_key: string;
  component_purl: string;
  component_name: string;
  component_version: string | null;
  ecosystem: string | null;
  advisory_ids: string[];
  aliases: string[];
  summary: string | null;
  severity: string;
  severity_rank: number;
  severity_source: string;
  cvss_score: number | null;
  /** the versions that fix the installed one: the fixes of the matched range intervals, in the ecosystem's order */
  fixed_versions: string[];
  /** every fix the matching records name for the package (other release lines too), in the ecosystem's order */
  record_fixed_versions: Generated<string[]>;
  matched_by: Json<unknown[]>;
  known_exploited: Generated<boolean>;
  kev_date_added: string | null;
  exploited_signal_at: Timestamp | null;
  vex_status: string | null;
  vex_justification: string | null;
  vex_statement_id: string | null;
  first_seen_at: Timestamp;
  updated_at: Timestamp;
}

export interface VexStatementsTable {
  id: Generated<string>;
  tenant_id: string;
  artifact_id: string;
  format: 'cyclonedx' | 'openvex';
  document_digest: ColumnType<Digest>;
  vuln_id: string;
  component_purl: string | null;
  status: 'not_affected' | 'affected' | 'fixed' | 'under_investigation';
  justification: string | null;
  impact_statement: string | null;
  action_statement: string | null;
  statement_at: Timestamp;
  recorded_at: Timestamp;
  actor: string;
}

export interface VulnAnalysisRunsTable {
  id: Generated<string>;
  tenant_id: string;
  reason: string;
  import_id: string | null;
  state: 'queued' | 'running' | 'completed';
  artifacts_total: Generated<number>;
  artifacts_done: Generated<number>;
  cursor: string | null;
  findings_added: Generated<number>;
  findings_removed: Generated<number>;
  findings_withdrawn: Generated<number>;
  signals: Generated<number>;
  lease_owner: string | null;
  lease_until: Timestamp | null;
  created_at: Timestamp;
  started_at: Timestamp | null;
  completed_at: Timestamp | null;
}

/** Written by database triggers only (receipts, legacy reports): read-only here. */
export interface VulnDeviceSoftwareTable {
  tenant_id: string;
  device_name: string;
  component: string;
  digest: ColumnType<Digest>;
  source: 'receipt' | 'legacy';
  source_id: string;
  release_id: string | null;
  observed_at: Timestamp;
}

/** Written by a database trigger on releases: read-only here. */
export interface VulnReleaseArtifactsTable {
  tenant_id: string;
  release_id: string;
  product: string;
  version: string;
  component: string;
  artifact_id: string;
  created_at: Timestamp;
}

export interface VulnTables {
  vuln_imports: VulnImportsTable;
  vuln_advisories: VulnAdvisoriesTable;
  vuln_affected_packages: VulnAffectedPackagesTable;
  vuln_ids: VulnIdsTable;
  vuln_kev: VulnKevTable;
  sbom_components: SbomComponentsTable;
  vuln_findings: VulnFindingsTable;
  vex_statements: VexStatementsTable;
  vuln_analysis_runs: VulnAnalysisRunsTable;
  vuln_device_software: VulnDeviceSoftwareTable;
  vuln_release_artifacts: VulnReleaseArtifactsTable;
}
