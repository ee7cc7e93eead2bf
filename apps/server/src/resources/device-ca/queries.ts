import { encodePem } from '@svc/release-core';
import type { Selectable } from 'kysely';
import type { DeviceCasTable } from '../../device-channel/tables.js';
import type { Db } from '../../store/tx.js';

/**
 * The per-tenant device CA rows (contracts §4) and the log of every device certificate it
 * issued. The CA's key is a file under the data dir (device-channel/device-ca.ts); the row
 * names it.
 */

/** One device CA of a tenant: the current one (it issues) or a retired one (kept for verification). */
export interface DeviceCaRow {
  tenantId: string;
  seq: number;
  certDer: Uint8Array;
  keyFile: string;
  createdAt: Date;
  /** undefined for the current CA */
  retiredAt: Date | undefined;
  /** a retired CA verifies certificates until then */
  trustedUntil: Date | undefined;
}

const CA_COLUMNS = ['tenant_id', 'seq', 'cert_der', 'key_file', 'created_at', 'retired_at', 'trusted_until'] as const;

function caRow(r: Pick<Selectable<DeviceCasTable>, (typeof CA_COLUMNS)[number]>): DeviceCaRow {
  return {
    tenantId: r.tenant_id,
    seq: r.seq,
    certDer: new Uint8Array(r.cert_der),
    keyFile: r.key_file,
    createdAt: new Date(r.created_at),
    retiredAt: r.retired_at === null ? undefined : new Date(r.retired_at),
    trustedUntil: r.trusted_until === null ? undefined : new Date(r.trusted_until),
  };
}

/** Whether a CA verifies certificates at `at`: the current one always, a retired one until its `trusted_until`. */
export function caTrustedAt(ca: Pick<DeviceCaRow, 'retiredAt' | 'trustedUntil'>, at: Date): boolean {
  return ca.trustedUntil === undefined || at.getTime() <= ca.trustedUntil.getTime();
}

/** The tenant's current CA certificate (DER), or undefined before its first enrollment. */
export async function deviceCaCertificate(db: Db, tenantId: string): Promise<Uint8Array | undefined> {
  return (await getDeviceCa(db, tenantId))?.certDer;
}

/** The tenant's current CA (the one that issues); `lock` takes its row for a rotation. */
export async function getDeviceCa(db: Db, tenantId: string, lock?: 'update'): Promise<DeviceCaRow | undefined> {
  let q = db.selectFrom('device_cas').select(CA_COLUMNS).where('tenant_id', '=', tenantId).where('retired_at', 'is', null);
  if (lock === 'update') q = q.forUpdate();
  const row = await q.executeTakeFirst();
  return row === undefined ? undefined : caRow(row);
}

/** Every device CA of the tenant, current and retired, newest first. */
export async function tenantDeviceCas(db: Db, tenantId: string): Promise<DeviceCaRow[]> {
  const rows = await db.selectFrom('device_cas').select(CA_COLUMNS).where('tenant_id', '=', tenantId).orderBy('seq', 'desc').execute();
  return rows.map(caRow);
}

/**
 * Every CA certificate the tenant has had, current first, as one PEM bundle: what an export
 * carries so its receipts verify offline (`svc-release verify-receipt --ca`), whichever CA
 * issued the certificate in each. Empty before the tenant's first enrollment.
 */
export async function tenantDeviceCaBundlePem(db: Db, tenantId: string): Promise<string> {
  return (await tenantDeviceCas(db, tenantId)).map((ca) => encodePem(ca.certDer, 'CERTIFICATE')).join('');
}

/** Every tenant's current CA, oldest first (the start-up key check: only a current CA needs its key). */
export async function currentDeviceCas(db: Db): Promise<DeviceCaRow[]> {
  const rows = await db.selectFrom('device_cas').select(CA_COLUMNS).where('retired_at', 'is', null).orderBy('created_at').orderBy('tenant_id').execute();
  return rows.map(caRow);
}

/** Whether any tenant has a device CA (current or retired): a device may have enrolled. */
export async function anyDeviceCa(db: Db): Promise<boolean> {
  return (await db.selectFrom('device_cas').select('tenant_id').limit(1).executeTakeFirst()) !== undefined;
}

/**
 * Every CA certificate (DER) of every tenant trusted at `at`, oldest first: the TLS trust store
 * of the device port. A retired CA past its `trusted_until` is left out.
 */
export async function allDeviceCaCertificates(db: Db, at: Date): Promise<Uint8Array[]> {
  const rows = await db
    .selectFrom('device_cas')
    .select('cert_der')
    .where((eb) => eb.or([eb('trusted_until', 'is', null), eb('trusted_until', '>=', at)]))
    .orderBy('created_at')
    .orderBy('tenant_id')
    .orderBy('seq')
    .execute();
  return rows.map((r) => new Uint8Array(r.cert_der));
}

/** Records the tenant's first CA unless another process recorded one first; true when this one won. */
export async function insertDeviceCa(db: Db, tenantId: string, certDer: Uint8Array, keyFile: string): Promise<boolean> {
  const row = await db
    .insertInto('device_cas')
    .values({ tenant_id: tenantId, cert_der: certDer, key_file: keyFile })
    // the primary key (tenant, seq 1) or the one current CA per tenant: either way another process won
    .onConflict((oc) => oc.doNothing())
    .returning('tenant_id')
    .executeTakeFirst();
  return row !== undefined;
}

/** Retires the tenant's current CA `seq` (locked by the caller); false when it is not current any more. */
export async function retireDeviceCa(db: Db, tenantId: string, seq: number, at: Date, trustedUntil: Date, by: string): Promise<boolean> {
  const row = await db
    .updateTable('device_cas')
    .set({ retired_at: at, trusted_until: trustedUntil, retired_by: by })
    .where('tenant_id', '=', tenantId)
    .where('seq', '=', seq)
    .where('retired_at', 'is', null)
    .returning('seq')
    .executeTakeFirst();
  return row !== undefined;
}

/** Records the tenant's next CA as its current one (after `retireDeviceCa`, in the same transaction). */
export async function insertNextDeviceCa(db: Db, tenantId: string, seq: number, certDer: Uint8Array, keyFile: string, at: Date): Promise<DeviceCaRow> {
  const row = await db
    .insertInto('device_cas')
    .values({ tenant_id: tenantId, seq, cert_der: certDer, key_file: keyFile, created_at: at })
    .returning(CA_COLUMNS)
    .executeTakeFirstOrThrow();
  return caRow(row);
}

/** The expiry of the last device certificate the tenant was issued (enrollment or renewal), if any. */
export async function lastDeviceCertificateExpiry(db: Db, tenantId: string): Promise<Date | undefined> {
  const row = await db
    .selectFrom('device_certificates')
    .select((eb) => eb.fn.max('not_after').as('last'))
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row?.last == null ? undefined : new Date(row.last);
}

/** An issued device certificate's entry in its tenant's log (enrollment and renewal). */
export interface DeviceCertificateEntry {
  tenantId: string;
  deviceName: string;
  serial: string;
  fingerprint: string;
  notAfter: Date;
  reason: 'enroll' | 'renew';
  issuedAt: Date;
}

/** Appends an issued device certificate to the tenant's log. */
export async function insertDeviceCertificate(db: Db, c: DeviceCertificateEntry): Promise<void> {
  await insertDeviceCertificates(db, [c]);
}

/** Log entries of many issued certificates, one statement. */
export async function insertDeviceCertificates(db: Db, entries: readonly DeviceCertificateEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insertInto('device_certificates')
    .values(
      entries.map((c) => ({
        tenant_id: c.tenantId,
        device_name: c.deviceName,
        serial: c.serial,
        fingerprint: c.fingerprint,
        not_after: c.notAfter,
        reason: c.reason,
        issued_at: c.issuedAt,
      })),
    )
    .execute();
}
