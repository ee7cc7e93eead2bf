import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * A deployment's devices settled without a result: a device decommissioned while it still owed
 * one moves to `skipped` (resources/rollouts/commands.ts `skipDecommissionedDevice`), counted
 * here like the other terminal states so the displayed progress never scans device rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [`ALTER TABLE deployments ADD COLUMN n_skipped integer NOT NULL DEFAULT 0`]);
}
