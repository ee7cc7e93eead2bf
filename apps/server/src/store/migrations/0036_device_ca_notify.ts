import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * A new tenant device CA NOTIFYs `svc_device_cas` with the schema as payload, in the creating
 * transaction (delivered at COMMIT). Every server process LISTENs and reloads the device
 * port's TLS trust store (device-channel/channel-server.ts), so a device enrolled through one
 * process is trusted by all of them at once instead of at their next periodic refresh (which
 * stays, for the time a listener is reconnecting). Same pattern as migration 0009.
 */
export const DEVICE_CAS_CHANNEL = 'svc_device_cas';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE FUNCTION device_cas_notify() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       PERFORM pg_notify('${DEVICE_CAS_CHANNEL}', TG_TABLE_SCHEMA);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER device_cas_notify AFTER INSERT OR UPDATE OR DELETE ON device_cas
       FOR EACH STATEMENT EXECUTE FUNCTION device_cas_notify()`,
  ]);
}
