/** Keyset-paged reads of accepted receipts (oldest first) for the export: memory stays flat. */
import { sql } from 'kysely';
import { type Db } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import type { ExportRow } from './receipt-export.js';

export async function* iterateReceipts(db: Db, tenantId: string, f: { since?: Date; until?: Date; transactionId?: string }, batch = 500): AsyncGenerator<ExportRow> {
  if (f.transactionId !== undefined && !isUuid(f.transactionId)) return;
  let after: { at: Date; id: string } | undefined;
  for (;;) {
    let q = db
      .selectFrom('release_receipts as r')
      .innerJoin('deployments as d', 'd.id', 'r.deployment_id')
      .select(['r.id', 'r.device_name', 'r.rollout_id', 'r.deployment_id', 'd.member_count', 'r.release_id', 'r.payload_digest', 'r.envelope_digest', 'r.accepted_at', 'r.label', 'r.envelope_bytes'])
      .where('r.tenant_id', '=', tenantId);
    if (f.since) q = q.where('r.accepted_at', '>=', f.since);
    if (f.until) q = q.where('r.accepted_at', '<', f.until);
    if (f.transactionId) q = q.where('r.deployment_id', '=', f.transactionId);
    if (after) q = q.where(sql<boolean>`(r.accepted_at, r.id) > (${after.at}, ${after.id}::uuid)`);
    const rows = await q.orderBy('r.accepted_at').orderBy('r.id').limit(batch).execute();
    for (const r of rows) {
      yield {
        id: r.id,
        device: r.device_name,
        rollout_id: r.rollout_id,
        transaction_id: r.deployment_id,
        release_id: r.release_id,
        payload_digest: r.payload_digest,
        envelope_digest: r.envelope_digest,
        accepted_at: r.accepted_at,
        label: r.label,
        envelope_bytes: r.envelope_bytes,
      };
    }
    if (rows.length < batch) return;
    const last = rows[rows.length - 1]!;
    after = { at: last.accepted_at, id: last.id };
  }
}
