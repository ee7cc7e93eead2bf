import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { DevicesTable } from '../../../store/core-tables.js';
import type { Db } from '../../../store/tx.js';
import type { InventoryAttributes } from '../inventory.js';

/**
 * A device's identity: its row and statuses, enrollment (`upsertEnrolledDevices`, which the
 * device channel calls per batch), what the channel's authentication reads when its cache
 * cannot answer (`deviceCredentialRow`), the promotion of a renewed certificate, and
 * decommissioning. Heartbeats and the offline detector are in `presence.ts`, the REST list in
 * `list.ts`, one device's history, release, software and tags in `detail.ts`.
 */
export const DEVICE_STATUSES = ['online', 'offline', 'decommissioned'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

export type DeviceRecord = Pick<Selectable<DevicesTable>, (typeof DEVICE_COLUMNS)[number]>;

export const DEVICE_COLUMNS = [
  'id',
  'tenant_id',
  'name',
  'status',
  'profile',
  'agent_version',
  'last_seen',
  'cert_fingerprint',
  'cert_not_after',
  'created_at',
  'updated_at',
] as const;

export async function getDeviceByName(db: Db, tenantId: string, name: string): Promise<DeviceRecord | undefined> {
  return db.selectFrom('devices').select(DEVICE_COLUMNS).where('tenant_id', '=', tenantId).where('name', '=', name).executeTakeFirst();
}

export async function addDeviceHistory(
  db: Db,
  tenantId: string,
  deviceId: string,
  event: string,
  at: Date,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await db
    .insertInto('device_history')
    .values({ tenant_id: tenantId, device_id: deviceId, event, at, detail: JSON.stringify(detail) })
    .execute();
}

/** One device's enrollment, as `upsertEnrolledDevices` writes it. */
export interface EnrolledDeviceInput {
  tenantId: string;
  name: string;
  profile?: string | null;
  agentVersion?: string | null;
  /** The reported attributes (docs/inventory.md); null keeps what the device had. */
  attributes?: InventoryAttributes | null;
  certFingerprint: string;
  certNotAfter: Date | null;
  now: Date;
}

/**
 * Enrollment: creates the device (online) or re-enrolls it with its new certificate, with an
 * `enrolled` history entry. A decommissioned device that enrolls again becomes online again
 * (a fresh token was used). One statement (`upsertEnrolledDevices`).
 */
export async function upsertEnrolledDevice(db: Db, input: EnrolledDeviceInput): Promise<DeviceRecord> {
  const [row] = await upsertEnrolledDevices(db, [input]);
  return row!;
}

/**
 * `upsertEnrolledDevice` for many devices with one statement (the devices, and their history
 * entries from what the upsert returned), so the counts and list-version triggers fire once
 * for all of them. The rows are written in (tenant, name) order, the order every batch locks
 * them in; a (tenant, name) may appear only once (PostgreSQL refuses to update one row twice
 * in a statement). Returns the rows in the order given.
 */
export async function upsertEnrolledDevices(db: Db, inputs: readonly EnrolledDeviceInput[]): Promise<DeviceRecord[]> {
  for (const input of inputs) {
    if (!IDENTIFIER_PATTERNS.deviceName.test(input.name)) throw new Error(`device name: must match ${IDENTIFIER_PATTERNS.deviceName.source}`);
  }
  const keyOf = (tenantId: string, name: string) => `${tenantId}/${name}`;
  const ordered = [...inputs].sort((a, b) => (a.tenantId === b.tenantId ? cmp(a.name, b.name) : cmp(a.tenantId, b.tenantId)));
  const rows = await db
    .with('enrolled', (qb) =>
      qb
        .insertInto('devices')
        .values(
          ordered.map((input) => ({
            tenant_id: input.tenantId,
            name: input.name,
            status: 'online',
            profile: input.profile ?? null,
            agent_version: input.agentVersion ?? null,
            inventory: input.attributes ? JSON.stringify(input.attributes) : '{}',
            last_seen: input.now,
            cert_fingerprint: input.certFingerprint,
            cert_not_after: input.certNotAfter,
            updated_at: input.now,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['tenant_id', 'name']).doUpdateSet((eb) => ({
            status: 'online',
            profile: eb.fn.coalesce(eb.ref('excluded.profile'), eb.ref('devices.profile')),
            agent_version: eb.fn.coalesce(eb.ref('excluded.agent_version'), eb.ref('devices.agent_version')),
            // an enrollment that reports no attributes keeps the ones the device had
            inventory: sql<string>`CASE WHEN excluded.inventory = '{}'::jsonb THEN devices.inventory ELSE excluded.inventory END`,
            last_seen: eb.ref('excluded.last_seen'),
            cert_fingerprint: eb.ref('excluded.cert_fingerprint'),
            cert_not_after: eb.ref('excluded.cert_not_after'),
            updated_at: eb.ref('excluded.updated_at'),
          })),
        )
        .returning(DEVICE_COLUMNS),
    )
    // the history entry at the enrollment's time (updated_at), naming its certificate
    .with('history', (qb) =>
      qb
        .insertInto('device_history')
        .columns(['tenant_id', 'device_id', 'event', 'at', 'detail'])
        .expression((eb) =>
          eb
            .selectFrom('enrolled')
            .select([
              'enrolled.tenant_id',
              'enrolled.id',
              sql.lit('enrolled').as('event'),
              'enrolled.updated_at',
              sql<string>`jsonb_build_object('cert_fingerprint', enrolled.cert_fingerprint)`.as('detail'),
            ]),
        ),
    )
    .selectFrom('enrolled')
    .select(DEVICE_COLUMNS)
    .execute();
  const byKey = new Map(rows.map((r) => [keyOf(r.tenant_id, r.name), r]));
  return inputs.map((input) => {
    const row = byKey.get(keyOf(input.tenantId, input.name));
    if (!row) throw new Error(`device ${input.name}: not written`);
    return row;
  });
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What the device channel's authentication reads of a device when its cache cannot answer (one indexed row). */
export async function deviceCredentialRow(
  db: Db,
  tenantId: string,
  name: string,
): Promise<{ id: string; status: string; cert_fingerprint: string | null } | undefined> {
  return db.selectFrom('devices').select(['id', 'status', 'cert_fingerprint']).where('tenant_id', '=', tenantId).where('name', '=', name).executeTakeFirst();
}

/**
 * A renewed certificate becomes the device's current one at its first use (device-channel/peer.ts):
 * until then the previous one keeps working, so a device that lost the renewal answer (crash,
 * cut connection) still gets in and renews again. Only the newest certificate issued to the
 * device qualifies, and only when it was a renewal: re-enrollment issues a newer one, and a
 * second renewal supersedes the first. Compare-and-set on the fingerprint the caller read.
 * Returns false when the certificate does not qualify.
 */
export async function promoteRenewedCertificate(
  db: Db,
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

/** Sets a device's status to decommissioned; undefined when it does not exist or already is. Counts follow by trigger. */
export async function setDecommissioned(db: Db, tenantId: string, name: string, now: Date): Promise<DeviceRecord | undefined> {
  return db
    .updateTable('devices')
    .set({ status: 'decommissioned', updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .where('status', '<>', 'decommissioned')
    .returning(DEVICE_COLUMNS)
    .executeTakeFirst();
}
