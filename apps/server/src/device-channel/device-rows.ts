import { sql, type Kysely } from 'kysely';
import type { Database } from '../store/database.js';

/**
 * The device channel's writes to the platform's `devices` and `log_requests` tables:
 * enrollment, certificate rotation, heartbeat. All state is in the database so any server
 * process can answer any device.
 */

export interface Inventory {
  agentVersion: string;
  profile: string;
}

/** Creates or re-enrolls the device with its new certificate; status online. */
export async function enrollDevice(
  db: Kysely<Database>,
  a: { tenantId: string; name: string; fingerprint: string; notAfter: Date; inventory: Inventory; now: Date },
): Promise<{ id: string; created: boolean }> {
  const row = await db
    .insertInto('devices')
    .values({
      tenant_id: a.tenantId,
      name: a.name,
      status: 'online',
      profile: a.inventory.profile || null,
      agent_version: a.inventory.agentVersion || null,
      last_seen: a.now,
      cert_fingerprint: a.fingerprint,
      cert_not_after: a.notAfter,
    })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'name']).doUpdateSet({
        status: 'online',
        profile: a.inventory.profile || null,
        agent_version: a.inventory.agentVersion || null,
        last_seen: a.now,
        cert_fingerprint: a.fingerprint,
        cert_not_after: a.notAfter,
      }),
    )
    // xmax = 0 only for a freshly inserted row: tells enroll from re-enroll in one statement.
    .returning(['id', sql<boolean>`(xmax = 0)`.as('created')])
    .executeTakeFirstOrThrow();
  await db
    .insertInto('device_history')
    .values({ tenant_id: a.tenantId, device_id: row.id, event: row.created ? 'enrolled' : 're-enrolled', detail: JSON.stringify({ fingerprint: a.fingerprint }) })
    .execute();
  return { id: row.id, created: row.created };
}

/** Replaces the device's current certificate: the old one stops working at once (peer.ts). */
export async function rotateCertificate(db: Kysely<Database>, deviceId: string, fingerprint: string, notAfter: Date): Promise<void> {
  await db.updateTable('devices').set({ cert_fingerprint: fingerprint, cert_not_after: notAfter }).where('id', '=', deviceId).execute();
}

/** Heartbeat: online, last_seen, inventory. Never resurrects a decommissioned device. */
export async function markSeen(db: Kysely<Database>, deviceId: string, inventory: Inventory, now: Date): Promise<void> {
  await db
    .updateTable('devices')
    .set({ status: 'online', last_seen: now, profile: inventory.profile || null, agent_version: inventory.agentVersion || null })
    .where('id', '=', deviceId)
    .where('status', '!=', 'decommissioned')
    .execute();
}

/**
 * Log requests the device has to answer: pending ones move to `delivered`; delivered but not
 * yet uploaded ones are returned again so a device that crashed mid-upload tries again.
 */
export async function openLogRequests(db: Kysely<Database>, deviceId: string): Promise<{ id: string; created_at: Date }[]> {
  const rows = await db
    .selectFrom('log_requests')
    .select(['id', 'created_at', 'status'])
    .where('device_id', '=', deviceId)
    .where('status', 'in', ['pending', 'delivered'])
    .orderBy('created_at')
    .limit(20)
    .execute();
  const pending = rows.filter((r) => r.status === 'pending').map((r) => r.id);
  if (pending.length > 0) {
    await db.updateTable('log_requests').set({ status: 'delivered' }).where('id', 'in', pending).where('status', '=', 'pending').execute();
  }
  return rows.map((r) => ({ id: r.id, created_at: new Date(r.created_at as unknown as Date | string) }));
}

/** Stores the bundle of an open log request of this device; false when there is none. */
export async function storeLogBundle(
  db: Kysely<Database>,
  a: { deviceId: string; requestId: string; contentType: string; content: Uint8Array; now: Date },
): Promise<boolean> {
  const r = await db
    .updateTable('log_requests')
    .set({ status: 'uploaded', content: a.content, content_type: a.contentType, fulfilled_at: a.now })
    .where('id', '=', a.requestId)
    .where('device_id', '=', a.deviceId)
    .where('status', 'in', ['pending', 'delivered'])
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Devices not seen for `missedIntervals` check-in intervals go offline. One UPDATE: safe
 * when several server processes run it at once (each row flips once; the counts trigger
 * fires once per flip).
 */
export async function markOfflineDevices(db: Kysely<Database>, now: Date, intervalS: number, missedIntervals = 3): Promise<number> {
  const cutoff = new Date(now.getTime() - intervalS * missedIntervals * 1000);
  const r = await db.updateTable('devices').set({ status: 'offline' }).where('status', '=', 'online').where('last_seen', '<', cutoff).executeTakeFirst();
  return Number(r.numUpdatedRows);
}
