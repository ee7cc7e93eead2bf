/**
 * Publish-and-deploy pipeline tables (docs/publish-and-deploy.md): artifacts and SBOMs, registries,
 * authorizer keys, device groups with their stored snapshot digest, releases, deployments
 * (a release transaction or a legacy rollout), member rollouts, waves, per-device progress,
 * and the append-only receipts and legacy reports.
 *
 * Every row carries tenant_id. Receipts and legacy reports have no update or delete path:
 * a trigger raises on UPDATE and DELETE (spec §2.3 rule 5, 3.7), so even raw SQL cannot rewrite them.
 */
import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE authorizer_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      name text NOT NULL,
      keyid text NOT NULL,
      public_key_pem text NOT NULL,
      created_at timestamptz NOT NULL,
      revoked_at timestamptz,
      UNIQUE (tenant_id, keyid)
    )`,
    `CREATE TABLE artifacts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      name text NOT NULL,
      version text NOT NULL,
      kind text NOT NULL,
      media_type text NOT NULL,
      filename text NOT NULL,
      digest text NOT NULL,
      length bigint NOT NULL,
      target text NOT NULL,
      source text NOT NULL DEFAULT 'upload',
      description text,
      labels jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      UNIQUE (tenant_id, name, version)
    )`,
    `CREATE INDEX artifacts_tenant_kind ON artifacts (tenant_id, kind, created_at)`,
    `CREATE TABLE artifact_sboms (
      artifact_id uuid PRIMARY KEY REFERENCES artifacts (id),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      format text NOT NULL,
      content_type text NOT NULL,
      bytes bytea NOT NULL,
      digest text NOT NULL,
      severities text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL
    )`,
    `CREATE TABLE registries (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      name text NOT NULL,
      url text NOT NULL,
      credentials_ref text,
      created_at timestamptz NOT NULL,
      UNIQUE (tenant_id, name)
    )`,
    `CREATE TABLE device_groups (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      name text NOT NULL,
      member_count integer NOT NULL DEFAULT 0,
      snapshot_digest text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      UNIQUE (tenant_id, name)
    )`,
    `CREATE TABLE device_group_members (
      group_id uuid NOT NULL REFERENCES device_groups (id),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      device_name text NOT NULL,
      PRIMARY KEY (group_id, device_name)
    )`,
    // member names in byte order (what the snapshot digest and GET /groups/{id} walk)
    `CREATE INDEX device_group_members_name_c ON device_group_members (group_id, device_name COLLATE "C")`,
    `CREATE TABLE releases (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      product text NOT NULL,
      version text NOT NULL,
      payload_digest text NOT NULL,
      envelope_digest text NOT NULL,
      keyid text NOT NULL,
      target text NOT NULL,
      envelope_bytes bytea NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (tenant_id, product, version)
    )`,
    `CREATE TABLE deployments (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      kind text NOT NULL CHECK (kind IN ('signed', 'legacy')),
      release_id uuid REFERENCES releases (id),
      artifact_id uuid REFERENCES artifacts (id),
      group_id uuid NOT NULL REFERENCES device_groups (id),
      snapshot_digest text NOT NULL,
      member_count integer NOT NULL,
      device_count integer NOT NULL,
      n_committed integer NOT NULL DEFAULT 0,
      n_rolled_back integer NOT NULL DEFAULT 0,
      n_failed integer NOT NULL DEFAULT 0,
      n_installed integer NOT NULL DEFAULT 0,
      failure_threshold jsonb,
      aborted_at timestamptz,
      created_at timestamptz NOT NULL
    )`,
    `CREATE INDEX deployments_tenant ON deployments (tenant_id, created_at)`,
    `CREATE TABLE rollouts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      kind text NOT NULL CHECK (kind IN ('signed', 'legacy')),
      release_id uuid REFERENCES releases (id),
      artifact_id uuid NOT NULL REFERENCES artifacts (id),
      component text NOT NULL,
      group_index integer NOT NULL,
      position integer NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (deployment_id, position)
    )`,
    `CREATE INDEX rollouts_tenant ON rollouts (tenant_id, created_at)`,
    `CREATE TABLE deployment_waves (
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      idx integer NOT NULL,
      name text NOT NULL,
      size integer NOT NULL,
      requires_approval boolean NOT NULL,
      state text NOT NULL,
      done integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      failures_acknowledged integer NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (deployment_id, idx)
    )`,
    // No foreign keys here on purpose: a rollout start inserts one row per device (100k+) in the
    // same transaction as its deployment row, and per-row RI triggers would dominate that insert.
    `CREATE TABLE deployment_devices (
      deployment_id uuid NOT NULL,
      tenant_id uuid NOT NULL,
      device_name text NOT NULL,
      wave_idx integer NOT NULL,
      state text NOT NULL DEFAULT 'pending',
      receipt_id uuid,
      updated_at timestamptz,
      PRIMARY KEY (deployment_id, device_name)
    )`,
    `CREATE INDEX deployment_devices_device ON deployment_devices (tenant_id, device_name)`,
    // result manifests and device pages walk a deployment in byte order of names (UTF-16 order for the ASCII names of contracts §4)
    `CREATE INDEX deployment_devices_name_c ON deployment_devices (deployment_id, device_name COLLATE "C")`,
    `CREATE TABLE release_receipts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      release_id uuid NOT NULL REFERENCES releases (id),
      rollout_id uuid REFERENCES rollouts (id),
      device_name text NOT NULL,
      activation text NOT NULL,
      health text NOT NULL,
      payload_digest text NOT NULL,
      envelope_digest text NOT NULL UNIQUE,
      envelope_bytes bytea NOT NULL,
      payload jsonb NOT NULL,
      label text NOT NULL DEFAULT 'software-key',
      accepted_at timestamptz NOT NULL
    )`,
    `CREATE INDEX release_receipts_tenant ON release_receipts (tenant_id, accepted_at, id)`,
    `CREATE TABLE legacy_status_reports (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      deployment_id uuid NOT NULL REFERENCES deployments (id),
      rollout_id uuid NOT NULL REFERENCES rollouts (id),
      device_name text NOT NULL,
      status text NOT NULL CHECK (status IN ('installed', 'failed')),
      detail text,
      label text NOT NULL DEFAULT 'device-reported',
      reported_at timestamptz NOT NULL
    )`,
    `CREATE FUNCTION pipeline_append_only() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
        BEGIN
      RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP;
    END $$`,
    `CREATE TRIGGER release_receipts_append_only BEFORE UPDATE OR DELETE ON release_receipts
      FOR EACH ROW EXECUTE FUNCTION pipeline_append_only()`,
    `CREATE TRIGGER release_receipts_no_truncate BEFORE TRUNCATE ON release_receipts
      FOR EACH STATEMENT EXECUTE FUNCTION pipeline_append_only()`,
    `CREATE TRIGGER legacy_status_reports_append_only BEFORE UPDATE OR DELETE ON legacy_status_reports
      FOR EACH ROW EXECUTE FUNCTION pipeline_append_only()`,
  ]);
}
