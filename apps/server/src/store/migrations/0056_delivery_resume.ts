import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Resumed downloads in the delivery report (docs/delta-updates.md "Resume"): per member, the
 * download attempts it took, how many of them continued from kept bytes, and, for a download
 * that did not complete, the agent's error code and what its last attempt said.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE receipt_deliveries
      ADD COLUMN attempts integer CHECK (attempts >= 1),
      ADD COLUMN resumes integer CHECK (resumes >= 0),
      ADD COLUMN failure text,
      ADD COLUMN failure_detail text,
      ADD CHECK (failure_detail IS NULL OR failure IS NOT NULL)`,
  ]);
}
