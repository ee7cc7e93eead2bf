import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Reporting-platform packets of Article 14 cases (docs/article-14.md "Reporting-platform
 * packet"): the fields of the single reporting platform's form for one stage, in the form's
 * order, filled from the case and the fleet at the moment they were prepared. The exact packet
 * is RFC 8785 canonical JSON (its SHA-256 is `digest`). Append-only like the submissions
 * (`pipeline_append_only`, migration 0006): a packet prepared again is a new row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE case_srp_packets (
      id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      case_id uuid NOT NULL REFERENCES cases (id),
      stage text NOT NULL CHECK (stage IN ('early_warning', 'notification', 'final_report')),
      form_version text NOT NULL,
      submission_id uuid REFERENCES case_submissions (id),
      document bytea NOT NULL,
      digest text NOT NULL,
      missing integer NOT NULL CHECK (missing >= 0),
      created_by text NOT NULL,
      created_at timestamptz NOT NULL
    )`,
    `CREATE INDEX case_srp_packets_case ON case_srp_packets (case_id, seq)`,
    `CREATE TRIGGER case_srp_packets_append_only BEFORE UPDATE OR DELETE ON case_srp_packets
      FOR EACH ROW EXECUTE FUNCTION pipeline_append_only()`,
    `CREATE TRIGGER case_srp_packets_no_truncate BEFORE TRUNCATE ON case_srp_packets
      FOR EACH STATEMENT EXECUTE FUNCTION pipeline_append_only()`,
  ]);
}
