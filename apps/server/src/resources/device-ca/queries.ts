import type { Db } from '../../store/tx.js';

/**
 * The per-tenant device CA rows (contracts §4) and the log of every device certificate it
 * issued. The CA's key is a file under the data dir (device-channel/device-ca.ts); the row
 * names it.
 */

/** The tenant's CA certificate (DER), or undefined before its first enrollment. */
export async function deviceCaCertificate(db: Db, tenantId: string): Promise<Uint8Array | undefined> {
  const row = await db.selectFrom('device_cas').select('cert_der').where('tenant_id', '=', tenantId).executeTakeFirst();
  return row === undefined ? undefined : new Uint8Array(row.cert_der);
}

/** The tenant's CA certificate and the name of its key file. */
export async function getDeviceCa(db: Db, tenantId: string): Promise<{ certDer: Uint8Array; keyFile: string } | undefined> {
  const row = await db.selectFrom('device_cas').select(['cert_der', 'key_file']).where('tenant_id', '=', tenantId).executeTakeFirst();
  return row === undefined ? undefined : { certDer: new Uint8Array(row.cert_der), keyFile: row.key_file };
}

/** Every tenant's CA certificate and key file name, oldest first (the start-up key check). */
export async function allDeviceCas(db: Db): Promise<{ tenantId: string; certDer: Uint8Array; keyFile: string }[]> {
  const rows = await db.selectFrom('device_cas').select(['tenant_id', 'cert_der', 'key_file']).orderBy('created_at').execute();
  return rows.map((r) => ({ tenantId: r.tenant_id, certDer: new Uint8Array(r.cert_der), keyFile: r.key_file }));
}

/** Every tenant's CA certificate (DER), oldest first: the TLS trust store of the device port. */
export async function allDeviceCaCertificates(db: Db): Promise<Uint8Array[]> {
  const rows = await db.selectFrom('device_cas').select('cert_der').orderBy('created_at').execute();
  return rows.map((r) => new Uint8Array(r.cert_der));
}

/** Records the tenant's CA unless another process recorded one first; true when this one won. */
export async function insertDeviceCa(db: Db, tenantId: string, certDer: Uint8Array, keyFile: string): Promise<boolean> {
  const row = await db
    .insertInto('device_cas')
    .values({ tenant_id: tenantId, cert_der: certDer, key_file: keyFile })
    .onConflict((oc) => oc.column('tenant_id').doNothing())
    .returning('tenant_id')
    .executeTakeFirst();
  return row !== undefined;
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
