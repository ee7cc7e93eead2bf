import { LIMITS } from '@svc/release-core';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../../store/database.js';
import type { Db } from '../../store/tx.js';

/**
 * Device log requests: created `pending` by the API (202), handed to the device on its
 * next heartbeat (`delivered`, device channel), `uploaded` with the bundle bytes (at most
 * LIMITS.logBundleBytes).
 */

const COLUMNS = ['id', 'tenant_id', 'device_id', 'status', 'requested_by', 'created_at', 'fulfilled_at', 'content_type'] as const;

export type LogRequestRow = Awaited<ReturnType<typeof insertLogRequest>>;

export async function insertLogRequest(db: Db, tenantId: string, deviceId: string, requestedBy: string) {
  return db
    .insertInto('log_requests')
    .values({ tenant_id: tenantId, device_id: deviceId, requested_by: requestedBy, status: 'pending' })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function getLogRequest(db: Kysely<Database>, tenantId: string, deviceId: string, id: string) {
  return db
    .selectFrom('log_requests')
    .select(COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('device_id', '=', deviceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function getLogContent(db: Kysely<Database>, tenantId: string, id: string) {
  return db.selectFrom('log_requests').select(['status', 'content', 'content_type']).where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
}

/** Device channel, on heartbeat: the pending requests of this device, marked delivered. */
export async function takePendingLogRequests(db: Kysely<Database>, deviceId: string): Promise<string[]> {
  const rows = await db
    .updateTable('log_requests')
    .set({ status: 'delivered' })
    .where('device_id', '=', deviceId)
    .where('status', '=', 'pending')
    .returning(['id'])
    .execute();
  return rows.map((r) => r.id);
}

/** Device channel, on upload: stores the bundle (bounded) and fulfils the request. */
export async function fulfillLogRequest(db: Db, deviceId: string, id: string, content: Uint8Array, contentType: string, now: Date): Promise<boolean> {
  if (content.byteLength > LIMITS.logBundleBytes) throw new Error(`log bundle: larger than ${LIMITS.logBundleBytes} bytes`);
  const row = await db
    .updateTable('log_requests')
    .set({ status: 'uploaded', content, content_type: contentType, fulfilled_at: now })
    .where('device_id', '=', deviceId)
    .where('id', '=', id)
    .where('status', 'in', ['pending', 'delivered'])
    .returning(['id'])
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Device channel, on check-in, read only: the open log requests (at most 20, oldest first) and
 * whether any of them is still `pending`, which makes the check-in hand them over in a unit
 * of work (`openLogRequests`).
 */
export async function peekLogRequests(db: Db, deviceId: string): Promise<OpenLogRequest[]> {
  const rows = await db
    .selectFrom('log_requests')
    .select(['id', 'created_at', 'status'])
    .where('device_id', '=', deviceId)
    .where('status', 'in', ['pending', 'delivered'])
    .orderBy('created_at')
    .limit(20)
    .execute();
  return rows.map((r) => ({ id: r.id, created_at: new Date(r.created_at), pending: r.status === 'pending' }));
}

/** An open log request as a check-in reads it: `pending` ones are handed over by the check-in's unit of work. */
export interface OpenLogRequest {
  id: string;
  created_at: Date;
  pending: boolean;
}

/**
 * `peekLogRequests` as one column of a larger statement (the check-in's single read,
 * devices/queries/presence.ts `checkInState`): the same rows, in the same order, as a JSON
 * array; `openLogRequestsFrom` reads the column back.
 */
export function openLogRequestsOf(deviceId: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(SELECT coalesce(json_agg(json_build_object('id', l.id, 'created_at', l.created_at, 'status', l.status) ORDER BY l.created_at), '[]'::json)
    FROM (SELECT id, created_at, status FROM log_requests
          WHERE device_id = ${deviceId} AND status IN ('pending', 'delivered') ORDER BY created_at LIMIT 20) l)`;
}

/** The column `openLogRequestsOf` made (node-postgres and PGlite both hand JSON over parsed; text is parsed here). */
export function openLogRequestsFrom(column: unknown): OpenLogRequest[] {
  const rows = (typeof column === 'string' ? JSON.parse(column) : column) as { id: string; created_at: string; status: string }[];
  return rows.map((r) => ({ id: r.id, created_at: new Date(r.created_at), pending: r.status === 'pending' }));
}

/**
 * Device channel, on check-in: the log requests the device has to answer. Pending ones move to
 * `delivered`; delivered but not yet uploaded ones are returned again, so a device that crashed
 * mid-upload tries again.
 */
export async function openLogRequests(db: Db, deviceId: string): Promise<{ id: string; created_at: Date }[]> {
  const open = await peekLogRequests(db, deviceId);
  const pending = open.filter((r) => r.pending).map((r) => r.id);
  if (pending.length > 0) {
    await db.updateTable('log_requests').set({ status: 'delivered' }).where('id', 'in', pending).where('status', '=', 'pending').execute();
  }
  return open.map((r) => ({ id: r.id, created_at: r.created_at }));
}
