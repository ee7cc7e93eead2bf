import type { Kysely } from 'kysely';
import type { Database } from '../store/database.js';
import { addDeviceHistory } from '../resources/devices/queries.js';

/**
 * The device channel's own writes to the platform's tables (enrollment, heartbeat and log
 * uploads use the platform's store functions in src/store/devices.ts and log-requests.ts).
 */

export interface Inventory {
  agentVersion: string;
  profile: string;
}

/**
 * The heartbeat write of a check-in: ONE statement (the platform's `markDeviceSeen` reads the
 * row first, but the authentication just read it). Same effect: online, `last_seen`,
 * inventory, and an `online` history event when the device was not online before. A device
 * decommissioned since the authentication read is left alone (the WHERE clause).
 */
export async function recordHeartbeat(
  db: Kysely<Database>,
  peer: { tenantId: string; deviceId: string; status: string },
  inventory: { agentVersion?: string; profile?: string },
  now: Date,
): Promise<void> {
  const row = await db
    .updateTable('devices')
    .set({
      last_seen: now,
      status: 'online',
      updated_at: now,
      ...(inventory.agentVersion === undefined ? {} : { agent_version: inventory.agentVersion }),
      ...(inventory.profile === undefined ? {} : { profile: inventory.profile }),
    })
    .where('id', '=', peer.deviceId)
    .where('status', '!=', 'decommissioned')
    .returning(['id'])
    .executeTakeFirst();
  if (row !== undefined && peer.status !== 'online') await addDeviceHistory(db, peer.tenantId, peer.deviceId, 'online', now);
}

/**
 * A renewed certificate becomes the device's current one at its first use (peer.ts): until
 * then the previous one keeps working, so a device that lost the renewal answer (crash,
 * cut connection) still gets in and renews again. Only the newest certificate issued to the
 * device qualifies, and only when it was a renewal: re-enrollment issues a newer one, and a
 * second renewal supersedes the first. Compare-and-set on the fingerprint the caller read.
 * Returns false when the certificate does not qualify.
 */
export async function promoteRenewedCertificate(
  db: Kysely<Database>,
  a: { tenantId: string; deviceName: string; deviceId: string; currentFingerprint: string | null; fingerprint: string; now: Date },
): Promise<boolean> {
  const newest = await db
    .selectFrom('device_certificates')
    .select(['fingerprint', 'reason', 'not_after'])
    .where('tenant_id', '=', a.tenantId)
    .where('device_name', '=', a.deviceName)
    .orderBy('issued_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (newest === undefined || newest.fingerprint !== a.fingerprint || newest.reason !== 'renew') return false;
  const row = await db
    .updateTable('devices')
    .set({ cert_fingerprint: a.fingerprint, cert_not_after: new Date(newest.not_after), updated_at: a.now })
    .where('id', '=', a.deviceId)
    .where((eb) => (a.currentFingerprint === null ? eb('cert_fingerprint', 'is', null) : eb('cert_fingerprint', '=', a.currentFingerprint)))
    .returning(['id'])
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Log requests the device has to answer: pending ones move to `delivered`; delivered but not
 * yet uploaded ones are returned again, so a device that crashed mid-upload tries again.
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
  return rows.map((r) => ({ id: r.id, created_at: new Date(r.created_at) }));
}
