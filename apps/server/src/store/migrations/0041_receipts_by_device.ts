import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * A device's receipts newest first: the device page's current release (its newest activated
 * receipt) and its receipts list (`GET /release-receipts?device=`) read this index instead of
 * walking every receipt of the tenant.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [`CREATE INDEX release_receipts_tenant_device ON release_receipts (tenant_id, device_name, accepted_at)`]);
}
