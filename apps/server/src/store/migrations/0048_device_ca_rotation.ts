import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Device CA rotation (docs/device-channel.md "Device CA rotation"): a tenant may have several
 * device CAs, numbered by `seq`; exactly one is current (`retired_at` NULL) and issues every
 * new device certificate. A retired CA keeps only its certificate (its key may be lost: that is
 * why it was replaced) and stays trusted for verification until `trusted_until`, the expiry of
 * the last device certificate the tenant was issued before the retirement. The rotation
 * retires the current row and inserts the next in one unit of work, with its audit row; the
 * NOTIFY of migration 0036 tells every server process to re-read the set.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE device_cas
       ADD COLUMN seq integer NOT NULL DEFAULT 1 CHECK (seq > 0),
       ADD COLUMN retired_at timestamptz,
       ADD COLUMN trusted_until timestamptz,
       ADD COLUMN retired_by text`,
    `ALTER TABLE device_cas DROP CONSTRAINT device_cas_pkey`,
    `ALTER TABLE device_cas ADD PRIMARY KEY (tenant_id, seq)`,
    `ALTER TABLE device_cas ADD CONSTRAINT device_cas_retirement CHECK (
       (retired_at IS NULL) = (trusted_until IS NULL) AND (retired_at IS NULL) = (retired_by IS NULL)
       AND (trusted_until IS NULL OR trusted_until >= retired_at))`,
    `CREATE UNIQUE INDEX device_cas_current ON device_cas (tenant_id) WHERE retired_at IS NULL`,
  ]);
}
