import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * RAUC adaptive updates (docs/delta-updates.md "OS bundles: RAUC streaming"): the bytes of an
 * os-bundle member the bundle port sent to one device for one rollout, summed over every
 * request RAUC made (ranges and whole-file reads alike), counted on the server's side because
 * the device's RAUC does not report what it fetched. One row per (rollout, device).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE bundle_streams (
      rollout_id uuid NOT NULL REFERENCES rollouts (id),
      device_name text NOT NULL,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      bytes_sent bigint NOT NULL DEFAULT 0 CHECK (bytes_sent >= 0),
      requests integer NOT NULL DEFAULT 0 CHECK (requests >= 0),
      ranged_requests integer NOT NULL DEFAULT 0 CHECK (ranged_requests >= 0),
      first_at timestamptz NOT NULL,
      last_at timestamptz NOT NULL,
      PRIMARY KEY (rollout_id, device_name)
    )`,
    `CREATE INDEX bundle_streams_deployment ON bundle_streams (deployment_id)`,
  ]);
}
