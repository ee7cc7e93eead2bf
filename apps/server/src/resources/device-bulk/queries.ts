/**
 * Bulk actions over a filtered selection of devices (docs/inventory.md "Bulk actions"): the job
 * row, its devices (the selection frozen when the job was created) and their outcomes. Jobs
 * are leased through the database (`leaseBulkJob`), so one process works a job at a time and a
 * crashed one's lease lapses for another to continue from the pending devices.
 */
import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { DeviceBulkJobsTable } from '../../store/core-tables.js';
import type { Db } from '../../store/tx.js';

export type BulkJobRow = Selectable<DeviceBulkJobsTable>;
export const BULK_ACTIONS = ['group.add', 'group.remove', 'tag', 'untag', 'decommission', 'logs'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
export const BULK_OUTCOMES = ['pending', 'succeeded', 'unchanged', 'failed'] as const;
export type BulkOutcome = (typeof BULK_OUTCOMES)[number];

/**
 * The selection's condition: what the filter selects (`where`), narrowed to the devices named
 * (`names`) when the caller named them; at least one of the two is given.
 */
export function selectionWhere(where: RawBuilder<unknown> | undefined, names: readonly string[] | undefined): RawBuilder<unknown> {
  const named = names === undefined ? undefined : sql`devices.name = ANY(${[...names]}::text[])`;
  if (where !== undefined && named !== undefined) return sql`(${where}) AND ${named}`;
  return (where ?? named)!;
}

/** How many of the tenant's devices the condition selects, counting at most `max + 1`. */
export async function countSelection(db: Db, tenantId: string, where: RawBuilder<unknown>, max: number): Promise<number> {
  const r = await sql<{
    n: string;
  }>`SELECT count(*) AS n FROM (SELECT 1 FROM devices WHERE devices.tenant_id = ${tenantId} AND ${where} LIMIT ${max + 1}) AS s`.execute(db);
  return Number(r.rows[0]!.n);
}

export async function insertBulkJob(
  db: Db,
  j: { tenantId: string; action: BulkAction; filter: string; params: Record<string, string>; actor: string; credential: string; now: Date },
): Promise<string> {
  const row = await db
    .insertInto('device_bulk_jobs')
    .values({
      tenant_id: j.tenantId,
      action: j.action,
      filter: j.filter,
      params: JSON.stringify(j.params),
      actor: j.actor,
      credential: j.credential,
      created_at: j.now,
      updated_at: j.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The selection, frozen: one pending row per device the condition selects now (at most `max`). Answers the count. */
export async function insertBulkJobDevices(db: Db, jobId: string, tenantId: string, where: RawBuilder<unknown>, max: number): Promise<number> {
  const r = await sql`
    INSERT INTO device_bulk_job_devices (job_id, device_name)
    SELECT ${jobId}::uuid, devices.name FROM devices WHERE devices.tenant_id = ${tenantId} AND ${where} ORDER BY devices.name LIMIT ${max}`.execute(db);
  const n = Number(r.numAffectedRows ?? 0);
  await db.updateTable('device_bulk_jobs').set({ total: n }).where('id', '=', jobId).execute();
  return n;
}

/** Takes the oldest queued job, a running one whose lease lapsed, or one `owner` holds already (it continues), until `until`. */
export async function leaseBulkJob(db: Db, owner: string, now: Date, until: Date): Promise<BulkJobRow | undefined> {
  const r = await sql<BulkJobRow>`
    UPDATE device_bulk_jobs SET state = 'running', lease_owner = ${owner}, lease_until = ${until}::timestamptz, updated_at = ${now}::timestamptz
    WHERE id = (
      SELECT j.id FROM device_bulk_jobs j
      WHERE j.state = 'queued' OR (j.state = 'running' AND (j.lease_until < ${now}::timestamptz OR j.lease_owner = ${owner}))
      ORDER BY j.created_at, j.id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *`.execute(db);
  return r.rows[0];
}

export async function lockBulkJob(db: Db, id: string): Promise<BulkJobRow | undefined> {
  return db.selectFrom('device_bulk_jobs').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/** The next pending devices of the job, in name order. */
export async function pendingDevices(db: Db, jobId: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('device_bulk_job_devices')
    .select('device_name')
    .where('job_id', '=', jobId)
    .where('outcome', '=', 'pending')
    .orderBy('device_name')
    .limit(limit)
    .execute();
  return rows.map((r) => r.device_name);
}

/** Records each device's outcome and adds them to the job's counters (lease renewed). */
export async function recordOutcomes(
  db: Db,
  jobId: string,
  outcomes: readonly { device: string; outcome: Exclude<BulkOutcome, 'pending'>; detail: string | null }[],
  now: Date,
  leaseUntil: Date,
): Promise<void> {
  if (outcomes.length === 0) return;
  await sql`
    UPDATE device_bulk_job_devices d SET outcome = v.outcome, detail = v.detail, at = ${now}::timestamptz
    FROM unnest(${outcomes.map((o) => o.device)}::text[], ${outcomes.map((o) => o.outcome)}::text[], ${outcomes.map((o) => o.detail)}::text[]) AS v(device, outcome, detail)
    WHERE d.job_id = ${jobId} AND d.device_name = v.device`.execute(db);
  const failed = outcomes.filter((o) => o.outcome === 'failed').length;
  await db
    .updateTable('device_bulk_jobs')
    .set((eb) => ({
      succeeded: eb('succeeded', '+', outcomes.length - failed),
      failed: eb('failed', '+', failed),
      updated_at: now,
      lease_until: leaseUntil,
    }))
    .where('id', '=', jobId)
    .execute();
}

export async function finishBulkJob(db: Db, jobId: string, now: Date): Promise<void> {
  await db
    .updateTable('device_bulk_jobs')
    .set({ state: 'done', finished_at: now, updated_at: now, lease_owner: null, lease_until: null })
    .where('id', '=', jobId)
    .execute();
}

export async function getBulkJob(db: Db, tenantId: string, id: string): Promise<BulkJobRow | undefined> {
  return db.selectFrom('device_bulk_jobs').selectAll().where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** A page of a job's devices with their outcomes (name order), optionally of one outcome. */
export async function bulkJobDevices(db: Db, jobId: string, outcome: BulkOutcome | undefined, limit: number, offset: number) {
  let q = db.selectFrom('device_bulk_job_devices').select(['device_name', 'outcome', 'detail', 'at']).where('job_id', '=', jobId);
  if (outcome !== undefined) q = q.where('outcome', '=', outcome);
  return q.orderBy('device_name').limit(limit).offset(offset).execute();
}
