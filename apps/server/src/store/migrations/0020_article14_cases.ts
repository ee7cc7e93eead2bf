/**
 * Cyber Resilience Act Article 14 cases (docs/article-14.md): the case, and the append-only
 * records that are its evidence: awareness records (a correction is a new row with its
 * reason), assessment decisions (reportable, not reportable, reopened, closed), corrective
 * measures, intermediate-report requests, stage submissions (content-addressed documents),
 * their filings, attachments and attachment redactions.
 *
 * The `cases` row holds the current values the list filters and sorts on (state, awareness,
 * nearest deadline); every change to it is written by a command together with its audit row.
 * The evidence tables have no update or delete path: the receipts' trigger function
 * (`pipeline_append_only`, migration 0006) raises on UPDATE, DELETE and TRUNCATE, so even raw
 * SQL cannot rewrite a filed submission or an awareness record. Their `seq` orders them (two
 * records of one millisecond keep the order they were written in).
 */
import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

const APPEND_ONLY = [
  'case_awareness',
  'case_decisions',
  'case_measures',
  'case_intermediate_requests',
  'case_submissions',
  'case_filings',
  'case_attachments',
  'case_attachment_redactions',
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE cases (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      kind text NOT NULL CHECK (kind IN ('exploited_vulnerability', 'severe_incident')),
      state text NOT NULL CHECK (state IN ('open', 'reportable', 'not_reportable', 'closed')),
      title text NOT NULL,
      summary text NOT NULL DEFAULT '',
      owner text NOT NULL,
      products text[] NOT NULL DEFAULT '{}',
      artifact_ids uuid[] NOT NULL DEFAULT '{}',
      vulnerability_ids text[] NOT NULL DEFAULT '{}',
      device_names text[] NOT NULL DEFAULT '{}',
      group_ids uuid[] NOT NULL DEFAULT '{}',
      aware_at timestamptz NOT NULL,
      corrective_at timestamptz,
      corrective_release_id uuid REFERENCES releases (id),
      corrective_rollout_id uuid REFERENCES rollouts (id),
      next_due_at timestamptz,
      next_due_obligation text,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    // the list: filtered by tenant (and state), sorted by the nearest open deadline
    `CREATE INDEX cases_tenant_due ON cases (tenant_id, next_due_at, created_at, id)`,
    `CREATE INDEX cases_tenant_state ON cases (tenant_id, state)`,
    `CREATE TABLE case_awareness (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      aware_at timestamptz NOT NULL,
      aware_by text NOT NULL,
      evidence text NOT NULL,
      reason text,
      supersedes_id uuid UNIQUE REFERENCES case_awareness (id),
      recorded_by text NOT NULL,
      recorded_at timestamptz NOT NULL,
      CHECK ((supersedes_id IS NULL) = (reason IS NULL))
    )`,
    `CREATE INDEX case_awareness_case ON case_awareness (case_id, seq)`,
    `CREATE TABLE case_decisions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      decision text NOT NULL CHECK (decision IN ('reportable', 'not_reportable', 'reopened', 'closed')),
      rationale text NOT NULL,
      decided_by text NOT NULL,
      decided_at timestamptz NOT NULL,
      from_state text NOT NULL,
      recorded_by text NOT NULL,
      recorded_at timestamptz NOT NULL
    )`,
    `CREATE INDEX case_decisions_case ON case_decisions (case_id, seq)`,
    `CREATE TABLE case_measures (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      available_at timestamptz NOT NULL,
      release_id uuid REFERENCES releases (id),
      rollout_id uuid REFERENCES rollouts (id),
      description text NOT NULL,
      reason text,
      recorded_by text NOT NULL,
      recorded_at timestamptz NOT NULL
    )`,
    `CREATE INDEX case_measures_case ON case_measures (case_id, seq)`,
    `CREATE TABLE case_intermediate_requests (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      requested_by text NOT NULL,
      requested_at timestamptz NOT NULL,
      due_at timestamptz NOT NULL,
      reference text,
      recorded_by text NOT NULL,
      recorded_at timestamptz NOT NULL,
      CHECK (due_at > requested_at)
    )`,
    `CREATE INDEX case_intermediate_requests_case ON case_intermediate_requests (case_id, seq)`,
    `CREATE TABLE case_submissions (
      id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      stage text NOT NULL CHECK (stage IN ('early_warning', 'notification', 'intermediate', 'final_report', 'advisory')),
      supersedes_id uuid UNIQUE REFERENCES case_submissions (id),
      request_id uuid REFERENCES case_intermediate_requests (id),
      document bytea NOT NULL,
      digest text NOT NULL,
      pdf_digest text NOT NULL,
      pdf_length bigint NOT NULL,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (case_id, digest)
    )`,
    `CREATE INDEX case_submissions_case ON case_submissions (case_id, seq)`,
    `CREATE TABLE case_filings (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      submission_id uuid NOT NULL REFERENCES case_submissions (id),
      recipients text[] NOT NULL CHECK (cardinality(recipients) > 0 AND recipients <@ ARRAY['csirt', 'enisa', 'users']::text[]),
      member_state text,
      transport text NOT NULL CHECK (transport IN ('manual', 'file', 'webhook')),
      external_reference text,
      delivery jsonb NOT NULL DEFAULT '{}'::jsonb,
      filed_by text NOT NULL,
      filed_at timestamptz NOT NULL,
      recorded_at timestamptz NOT NULL
    )`,
    `CREATE INDEX case_filings_case ON case_filings (case_id, seq)`,
    `CREATE TABLE case_attachments (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      filename text NOT NULL,
      content_type text NOT NULL,
      digest text NOT NULL,
      length bigint NOT NULL,
      description text NOT NULL DEFAULT '',
      added_by text NOT NULL,
      added_at timestamptz NOT NULL
    )`,
    `CREATE INDEX case_attachments_case ON case_attachments (case_id, seq)`,
    `CREATE TABLE case_attachment_redactions (
      attachment_id uuid PRIMARY KEY REFERENCES case_attachments (id),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      reason text NOT NULL,
      redacted_by text NOT NULL,
      redacted_at timestamptz NOT NULL
    )`,
    // the audit-trail slice of one case (every case command audits target `case:<id>`)
    `CREATE INDEX audit_events_tenant_target_seq ON audit_events (tenant_id, target, seq)`,
    ...APPEND_ONLY.flatMap((table) => [
      `CREATE TRIGGER ${table}_append_only BEFORE UPDATE OR DELETE ON ${table}
        FOR EACH ROW EXECUTE FUNCTION pipeline_append_only()`,
      `CREATE TRIGGER ${table}_no_truncate BEFORE TRUNCATE ON ${table}
        FOR EACH STATEMENT EXECUTE FUNCTION pipeline_append_only()`,
    ]),
  ]);
}
