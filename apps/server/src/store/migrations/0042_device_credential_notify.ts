import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Device changes that can end or change what the device channel's authentication decided
 * for a certificate (device-channel/peer.ts: the device exists under this tenant and name,
 * is not decommissioned, and the certificate is its current one) NOTIFY
 * `svc_device_credentials` with the schema as payload, in the changing transaction, so it is
 * delivered at COMMIT: decommissioning (and leaving that status), a new current certificate
 * (enrollment, re-enrollment, renewal promotion), a new id, tenant or name, deletion and
 * truncation. Every server process LISTENs and forgets its cached authentications
 * (device-channel/credential-cache.ts): a device decommissioned through one process, or by
 * hand in SQL, is refused by all of them at once.
 *
 * Row level with a WHEN clause, so a heartbeat (which sets `status` to what it already is, or
 * from offline to online) and the offline detector never clear the caches.
 */
export const DEVICE_CREDENTIALS_CHANNEL = 'svc_device_credentials';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE FUNCTION device_credentials_notify() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       PERFORM pg_notify('${DEVICE_CREDENTIALS_CHANNEL}', TG_TABLE_SCHEMA);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER devices_credentials_notify_update AFTER UPDATE OF id, tenant_id, name, status, cert_fingerprint ON devices
       FOR EACH ROW WHEN (
         OLD.id IS DISTINCT FROM NEW.id
         OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
         OR OLD.name IS DISTINCT FROM NEW.name
         OR OLD.cert_fingerprint IS DISTINCT FROM NEW.cert_fingerprint
         OR (OLD.status = 'decommissioned') IS DISTINCT FROM (NEW.status = 'decommissioned')
       )
       EXECUTE FUNCTION device_credentials_notify()`,
    `CREATE TRIGGER devices_credentials_notify_delete AFTER DELETE OR TRUNCATE ON devices
       FOR EACH STATEMENT EXECUTE FUNCTION device_credentials_notify()`,
  ]);
}
