import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Matching details (docs/vulnerabilities.md): a finding's `fixed_versions` are the fixes of
 * the ranges that hold the installed version and `record_fixed_versions` every fix its
 * records name (what `fixed_versions` held before, kept until the re-analysis below rewrites
 * both); an OSV import counts and names the ranges matching cannot evaluate; an analysis run
 * counts the findings removed because their records were withdrawn. Every tenant with an SBOM
 * gets a re-analysis run: fixes are recomputed and ranges with partial SemVer bounds, now
 * read, are matched.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE vuln_findings ADD COLUMN record_fixed_versions text[] NOT NULL DEFAULT '{}'`,
    `UPDATE vuln_findings SET record_fixed_versions = fixed_versions`,
    `ALTER TABLE vuln_imports ADD COLUMN ranges_skipped integer NOT NULL DEFAULT 0`,
    `ALTER TABLE vuln_imports ADD COLUMN ranges_skipped_detail jsonb NOT NULL DEFAULT '[]'`,
    `ALTER TABLE vuln_analysis_runs ADD COLUMN findings_withdrawn integer NOT NULL DEFAULT 0`,
    `INSERT INTO vuln_analysis_runs (tenant_id, reason, import_id, state, created_at)
       SELECT DISTINCT s.tenant_id, 'migration:0045_vuln_matching_details', NULL::uuid, 'queued', now() FROM artifact_sboms s
       WHERE NOT EXISTS (SELECT 1 FROM vuln_analysis_runs r WHERE r.tenant_id = s.tenant_id AND r.state = 'queued')`,
  ]);
}
