import type { Digest } from '@svc/release-core';
import type { ColumnType, Generated } from 'kysely';
import type { GeneratedJson, Int8, Int8Identity, Timestamp } from './column-types.js';

/**
 * Table interfaces of the Article 14 cases (migration 0020_article14_cases), composed into the
 * server's `Database` in database.ts. Every row carries `tenant_id`; every table but `cases`
 * is append-only in the database.
 */

export interface CasesTable {
  id: Generated<string>;
  tenant_id: string;
  kind: string;
  state: string;
  title: string;
  summary: string;
  owner: string;
  products: string[];
  artifact_ids: string[];
  vulnerability_ids: string[];
  device_names: string[];
  group_ids: string[];
  aware_at: Timestamp;
  corrective_at: Timestamp | null;
  corrective_release_id: string | null;
  corrective_rollout_id: string | null;
  next_due_at: Timestamp | null;
  next_due_obligation: string | null;
  created_by: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CaseAwarenessTable {
  id: Generated<string>;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  aware_at: Timestamp;
  aware_by: string;
  evidence: string;
  reason: string | null;
  supersedes_id: string | null;
  recorded_by: string;
  recorded_at: Timestamp;
}

export interface CaseDecisionsTable {
  id: Generated<string>;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  decision: string;
  rationale: string;
  decided_by: string;
  decided_at: Timestamp;
  from_state: string;
  recorded_by: string;
  recorded_at: Timestamp;
}

export interface CaseMeasuresTable {
  id: Generated<string>;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  available_at: Timestamp;
  release_id: string | null;
  rollout_id: string | null;
  description: string;
  reason: string | null;
  recorded_by: string;
  recorded_at: Timestamp;
}

export interface CaseIntermediateRequestsTable {
  id: Generated<string>;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  requested_by: string;
  requested_at: Timestamp;
  due_at: Timestamp;
  reference: string | null;
  recorded_by: string;
  recorded_at: Timestamp;
}

export interface CaseSubmissionsTable {
  id: string;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  stage: string;
  supersedes_id: string | null;
  request_id: string | null;
  /** The exact submission document: RFC 8785 canonical JSON. */
  document: Uint8Array;
  digest: ColumnType<Digest>;
  pdf_digest: ColumnType<Digest>;
  pdf_length: Int8;
  created_by: string;
  created_at: Timestamp;
}

/** A reporting-platform packet (migration 0047): the form's fields of one stage, as prepared. */
export interface CaseSrpPacketsTable {
  id: string;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  stage: string;
  /** The version of the form's field table the packet follows. */
  form_version: string;
  /** The stage submission the packet's stage fields came from (null: none produced yet). */
  submission_id: string | null;
  /** The exact packet: RFC 8785 canonical JSON. */
  document: Uint8Array;
  digest: ColumnType<Digest>;
  /** How many required fields have no value. */
  missing: number;
  created_by: string;
  created_at: Timestamp;
}

export interface CaseFilingsTable {
  id: Generated<string>;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  submission_id: string;
  recipients: string[];
  member_state: string | null;
  transport: string;
  external_reference: string | null;
  delivery: GeneratedJson<Record<string, unknown>>;
  filed_by: string;
  filed_at: Timestamp;
  recorded_at: Timestamp;
}

export interface CaseAttachmentsTable {
  id: Generated<string>;
  /** Write order (an identity column). */
  seq: Int8Identity;
  tenant_id: string;
  case_id: string;
  filename: string;
  content_type: string;
  digest: ColumnType<Digest>;
  length: Int8;
  description: string;
  added_by: string;
  added_at: Timestamp;
}

export interface CaseAttachmentRedactionsTable {
  attachment_id: string;
  tenant_id: string;
  case_id: string;
  reason: string;
  redacted_by: string;
  redacted_at: Timestamp;
}

/** The evidence keys of case exports (migration 0046_evidence_keys): one current per tenant. */
export interface EvidenceKeysTable {
  tenant_id: string;
  /** 1 for the tenant's first key, one more per rotation. */
  seq: number;
  keyid: string;
  algorithm: Generated<string>;
  public_key_pem: string;
  valid_from: Timestamp;
  /** Null while the key is current. */
  valid_until: Timestamp | null;
  created_by: string;
  retired_by: string | null;
}

export interface CaseTables {
  cases: CasesTable;
  case_awareness: CaseAwarenessTable;
  case_decisions: CaseDecisionsTable;
  case_measures: CaseMeasuresTable;
  case_intermediate_requests: CaseIntermediateRequestsTable;
  case_submissions: CaseSubmissionsTable;
  case_filings: CaseFilingsTable;
  case_srp_packets: CaseSrpPacketsTable;
  case_attachments: CaseAttachmentsTable;
  case_attachment_redactions: CaseAttachmentRedactionsTable;
  evidence_keys: EvidenceKeysTable;
}
