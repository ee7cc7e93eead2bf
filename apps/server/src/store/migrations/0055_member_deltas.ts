import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

/**
 * Delta updates of file members (docs/delta-updates.md).
 *
 * - `member_deltas`: one row per (tenant, source member, target member), whatever rollout
 *   asked for it, so a delta is built once and reused by every later rollout between the same
 *   two digests. The delta-build job leases `queued` rows (and `building` rows whose lease
 *   lapsed), makes the delta with zstd, stores it as a content-addressed blob and publishes it as
 *   a TUF target at `target_path`; `skipped` is a delta not worth sending (too large next to the
 *   full member) or whose source bytes are gone, `failed` one zstd could not make in its bounds.
 * - `deployment_deltas`: which deltas a rollout asked for and for how many of its devices: a
 *   rollout's delta progress is read from here.
 * - `receipt_deliveries`: the delivery report a device sent beside a receipt, one row per
 *   member: how its bytes arrived (full, delta, adaptive), how many were transferred, and why
 *   a delta fell back to the full download.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE member_deltas (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      source_digest text NOT NULL CHECK (source_digest ~ '^sha256:[0-9a-f]{64}$'),
      target_digest text NOT NULL CHECK (target_digest ~ '^sha256:[0-9a-f]{64}$'),
      source_length bigint NOT NULL CHECK (source_length >= 0),
      target_length bigint NOT NULL CHECK (target_length >= 0),
      state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'building', 'ready', 'skipped', 'failed')),
      target_path text,
      delta_digest text CHECK (delta_digest ~ '^sha256:[0-9a-f]{64}$'),
      delta_length bigint,
      build_ms integer,
      build_peak_rss_bytes bigint,
      attempts integer NOT NULL DEFAULT 0,
      error text,
      lease_owner text,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CHECK ((state = 'ready') = (target_path IS NOT NULL AND delta_digest IS NOT NULL AND delta_length IS NOT NULL)),
      CHECK (source_digest <> target_digest),
      UNIQUE (tenant_id, target_digest, source_digest)
    )`,
    `CREATE INDEX member_deltas_open ON member_deltas (created_at) WHERE state IN ('queued', 'building')`,
    `CREATE TABLE deployment_deltas (
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      delta_id uuid NOT NULL REFERENCES member_deltas (id),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      component text NOT NULL,
      devices integer NOT NULL CHECK (devices > 0),
      PRIMARY KEY (deployment_id, delta_id)
    )`,
    `CREATE INDEX deployment_deltas_delta ON deployment_deltas (delta_id)`,
    `CREATE TABLE receipt_deliveries (
      receipt_id uuid NOT NULL REFERENCES release_receipts (id),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      device_name text NOT NULL,
      component text NOT NULL,
      method text NOT NULL CHECK (method IN ('full', 'delta', 'adaptive')),
      bytes_transferred bigint NOT NULL CHECK (bytes_transferred >= 0),
      full_length bigint NOT NULL CHECK (full_length >= 0),
      source_digest text,
      fallback text,
      reported_at timestamptz NOT NULL,
      PRIMARY KEY (receipt_id, component)
    )`,
    `CREATE INDEX receipt_deliveries_deployment ON receipt_deliveries (deployment_id)`,
  ]);
}
