import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * `GET /devices?sort=last_seen` and `-last_seen` walk this index forwards or backwards (name
 * breaks ties, so every page is stable); `status` and `-status` walk devices_tenant_status_name
 * (0002) and `-name` walks devices_tenant_name backwards. The default order (name) keeps its
 * own path (anchors, prepared statements, resources/devices/queries.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [`CREATE INDEX devices_tenant_last_seen_name ON devices (tenant_id, last_seen, name)`]);
}
