import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Indexes of the delivery view and of delta collection (docs/delta-updates.md):
 * - a device's last delivery per member (`GET /devices/{name}/deliveries`) reads
 *   `receipt_deliveries` by device, newest first per component;
 * - the blob collector keeps a delta's blob while its `member_deltas` row names it
 *   (blobs/pg-blob-queries.ts BLOB_REFERENCES) and looks the row up by that digest.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE INDEX receipt_deliveries_device ON receipt_deliveries (tenant_id, device_name, component, reported_at DESC)`,
    `CREATE INDEX member_deltas_delta_digest ON member_deltas (delta_digest) WHERE delta_digest IS NOT NULL`,
  ]);
}
