/**
 * What a case export reads besides the case's own records: the device-signed receipts that bear
 * on the case (keyset-paged, oldest first: memory stays flat however many there are), and the
 * records of the evidence keys that sign exports.
 */
import { sql, type Selectable } from 'kysely';
import type { EvidenceKeysTable } from '../../store/case-tables.js';
import type { ReleaseReceiptsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';

export type CaseReceiptRow = Pick<
  Selectable<ReleaseReceiptsTable>,
  'id' | 'device_name' | 'release_id' | 'rollout_id' | 'deployment_id' | 'payload_digest' | 'envelope_digest' | 'label' | 'accepted_at' | 'envelope_bytes'
>;

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

export type EvidenceKeyRow = Selectable<EvidenceKeysTable>;

/** The tenant's current evidence key record; `lock` holds it (FOR UPDATE / FOR SHARE) until the transaction ends. */
export async function currentEvidenceKey(db: Db, tenantId: string, lock?: 'update' | 'share'): Promise<EvidenceKeyRow | undefined> {
  let q = db.selectFrom('evidence_keys').selectAll().where('tenant_id', '=', tenantId).where('valid_until', 'is', null);
  if (lock === 'update') q = q.forUpdate();
  if (lock === 'share') q = q.forShare();
  return q.executeTakeFirst();
}

/** Every tenant's current evidence key record (the start-up key check). */
export async function allCurrentEvidenceKeys(db: Db): Promise<EvidenceKeyRow[]> {
  return db.selectFrom('evidence_keys').selectAll().where('valid_until', 'is', null).orderBy('tenant_id').execute();
}

/** Every evidence key of the tenant, oldest first. */
export async function listEvidenceKeys(db: Db, tenantId: string, limit: number, offset: number): Promise<EvidenceKeyRow[]> {
  return db.selectFrom('evidence_keys').selectAll().where('tenant_id', '=', tenantId).orderBy('seq').limit(limit).offset(offset).execute();
}

/** spec §8: how many keys, how many retired. */
export async function evidenceKeyCounts(db: Db, tenantId: string): Promise<{ total: number; retired: number }> {
  const c = await db
    .selectFrom('evidence_keys')
    .select((eb) => [eb.fn.countAll<string>().as('total'), eb.fn.count<string>('valid_until').as('retired')])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirstOrThrow();
  return { total: Number(c.total), retired: Number(c.retired) };
}

/**
 * Records the tenant's first evidence key unless a key is already recorded (a concurrent first
 * use won); true when this call recorded it.
 */
export async function insertFirstEvidenceKey(
  db: Db,
  tenantId: string,
  key: { keyid: string; publicKeyPem: string; validFrom: Date; createdBy: string },
): Promise<boolean> {
  const rows = await db
    .insertInto('evidence_keys')
    .values({ tenant_id: tenantId, seq: 1, keyid: key.keyid, public_key_pem: key.publicKeyPem, valid_from: key.validFrom, created_by: key.createdBy })
    .onConflict((oc) => oc.doNothing())
    .returning('seq')
    .execute();
  return rows.length === 1;
}

/** Ends the validity of key `seq` and records the key that follows it as current. */
export async function rotateEvidenceKeyRows(
  db: Db,
  tenantId: string,
  previous: EvidenceKeyRow,
  next: { keyid: string; publicKeyPem: string },
  at: Date,
  actor: string,
): Promise<EvidenceKeyRow> {
  await db
    .updateTable('evidence_keys')
    .set({ valid_until: at, retired_by: actor })
    .where('tenant_id', '=', tenantId)
    .where('seq', '=', previous.seq)
    .where('valid_until', 'is', null)
    .executeTakeFirstOrThrow();
  return db
    .insertInto('evidence_keys')
    .values({ tenant_id: tenantId, seq: previous.seq + 1, keyid: next.keyid, public_key_pem: next.publicKeyPem, valid_from: at, created_by: actor })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * When exports signed by `keyid` were first made: the earliest `case.export` audit row naming it.
 * A key file that predates the key records still covers the exports it signed.
 */
export async function firstExportWithKey(db: Db, tenantId: string, keyid: string): Promise<Date | undefined> {
  const { rows } = await sql<{ at: Date | null }>`
    SELECT min(at) AS at FROM audit_events WHERE tenant_id = ${tenantId} AND action = 'case.export' AND detail->>'keyid' = ${keyid}`.execute(db);
  const at = rows[0]?.at;
  return at === null || at === undefined ? undefined : new Date(at);
}
