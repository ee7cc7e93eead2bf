import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Bulk writes of the feeds and the analysis without row-by-row checks that guard nothing
 * their single writer does not already keep (docs/vulnerabilities.md "Performance").
 *
 * - An OSV import writes each record's row in `vuln_advisories` and its package keys and
 *   ids in one statement each, in the batch's transaction, after deleting the keys and ids
 *   of the records it replaces (resources/vuln-feeds/queries.ts); no advisory is ever
 *   deleted. The foreign keys from `vuln_affected_packages` and `vuln_ids` to their
 *   advisory, and from an advisory to the import that last wrote it, cost three checks per
 *   record (a key-share lock on the import row for every advisory). A replaced record's
 *   keys and ids are deleted by primary key (the stored record names them), so the two
 *   indexes by advisory, maintained for every row written, are dropped.
 * - The analysis writes findings only for artifacts it has just read from `artifact_sboms`
 *   (itself keyed to `artifacts`) in the run's tenant, in the same transaction; artifacts
 *   and tenants are never deleted. The foreign keys from `vuln_findings` to both cost two
 *   checks per finding (a key-share lock on the artifact row for each of its findings).
 * - `vuln_findings_artifact` repeats the leading column of the unique
 *   (artifact_id, vuln_key, component_purl) index, which serves the same lookups.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE vuln_affected_packages DROP CONSTRAINT vuln_affected_packages_advisory_id_fkey`,
    `ALTER TABLE vuln_ids DROP CONSTRAINT vuln_ids_advisory_id_fkey`,
    `ALTER TABLE vuln_advisories DROP CONSTRAINT vuln_advisories_import_id_fkey`,
    `ALTER TABLE vuln_findings DROP CONSTRAINT vuln_findings_tenant_id_fkey`,
    `ALTER TABLE vuln_findings DROP CONSTRAINT vuln_findings_artifact_id_fkey`,
    `DROP INDEX vuln_affected_packages_advisory`,
    `DROP INDEX vuln_ids_advisory`,
    `DROP INDEX vuln_findings_artifact`,
  ]);
}
