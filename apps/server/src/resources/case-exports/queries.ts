/**
 * What a case export reads besides the case's own records: the device-signed receipts that bear
 * on the case. Keyset-paged, oldest first: memory stays flat however many there are.
 */
import { sql } from 'kysely';
import type { Db } from '../../store/tx.js';

export interface CaseReceiptRow {
  id: string;
  device_name: string;
  release_id: string;
  rollout_id: string | null;
  deployment_id: string;
  payload_digest: string;
  envelope_digest: string;
  label: string;
  accepted_at: Date;
  envelope_bytes: Uint8Array;
}

export interface ReceiptScope {
  /** Rollouts linked to the case (the corrective measure's): every receipt of their deployments. */
  rolloutIds: readonly string[];
  /** Devices named on the case and members of its groups: their receipts from awareness on. */
  deviceNames: readonly string[];
  groupIds: readonly string[];
  since: Date;
}

/** The receipts relevant to a case, deduplicated, in (accepted_at, id) order, at most `max`. */
export async function* iterateCaseReceipts(db: Db, tenantId: string, scope: ReceiptScope, max: number, batch = 500): AsyncGenerator<CaseReceiptRow> {
  if (scope.rolloutIds.length === 0 && scope.deviceNames.length === 0 && scope.groupIds.length === 0) return;
  const rollouts = sql`ARRAY[${sql.join(scope.rolloutIds.length > 0 ? scope.rolloutIds.map((id) => sql`${id}`) : [sql`NULL`])}]::uuid[]`;
  const devices = sql`ARRAY[${sql.join(scope.deviceNames.length > 0 ? scope.deviceNames.map((n) => sql`${n}`) : [sql`NULL`])}]::text[]`;
  const groups = sql`ARRAY[${sql.join(scope.groupIds.length > 0 ? scope.groupIds.map((id) => sql`${id}`) : [sql`NULL`])}]::uuid[]`;
  let after: { at: Date; id: string } | undefined;
  let sent = 0;
  while (sent < max) {
    const { rows } = await sql<CaseReceiptRow>`
      SELECT r.id, r.device_name, r.release_id, r.rollout_id, r.deployment_id, r.payload_digest, r.envelope_digest, r.label, r.accepted_at, r.envelope_bytes
      FROM release_receipts r
      WHERE r.tenant_id = ${tenantId}
        AND (
          r.deployment_id IN (SELECT deployment_id FROM rollouts WHERE tenant_id = ${tenantId} AND id = ANY(${rollouts}))
          OR (r.accepted_at >= ${scope.since} AND (
            r.device_name = ANY(${devices})
            OR r.device_name IN (SELECT device_name FROM device_group_members WHERE tenant_id = ${tenantId} AND group_id = ANY(${groups}))
          ))
        )
        ${after === undefined ? sql`` : sql`AND (r.accepted_at, r.id) > (${after.at}, ${after.id}::uuid)`}
      ORDER BY r.accepted_at, r.id
      LIMIT ${Math.min(batch, max - sent)}`.execute(db);
    for (const r of rows) yield r;
    sent += rows.length;
    if (rows.length < batch) return;
    const last = rows[rows.length - 1]!;
    after = { at: last.accepted_at, id: last.id };
  }
}
