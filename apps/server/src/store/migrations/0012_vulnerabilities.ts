/**
 * Vulnerability intelligence (docs/vulnerabilities.md).
 *
 * Global (one copy serves every tenant): feed imports, OSV advisories with their affected
 * package keys and every id and alias, the CISA KEV catalog.
 * Per tenant: the SBOM component index (by package URL), findings (derived: recomputed by
 * analysis), VEX statements (append-only, like receipts), analysis runs (leased jobs).
 * Fleet indexes kept by the database in the writer's transaction: what each device runs
 * (from accepted receipts, and legacy `installed` reports where only those exist) and which
 * artifacts each release names (from its signed payload), so exposure is read from indexes.
 */
import type { Kysely } from 'kysely';
import { runStatements } from './sql.js';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    // the SBOM severities typed into CycloneDX documents are replaced by findings
    `ALTER TABLE artifact_sboms DROP COLUMN severities`,
    `CREATE TABLE vuln_imports (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      kind text NOT NULL CHECK (kind IN ('osv', 'kev')),
      source text NOT NULL,
      digest text NOT NULL,
      state text NOT NULL CHECK (state IN ('running', 'completed')),
      entries_total integer NOT NULL,
      entries_done integer NOT NULL DEFAULT 0,
      added integer NOT NULL DEFAULT 0,
      updated integer NOT NULL DEFAULT 0,
      unchanged integer NOT NULL DEFAULT 0,
      skipped integer NOT NULL DEFAULT 0,
      skipped_detail jsonb NOT NULL DEFAULT '[]'::jsonb,
      catalog_version text,
      released_at timestamptz,
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      actor text NOT NULL,
      started_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      completed_at timestamptz,
      UNIQUE (kind, digest)
    )`,
    `CREATE INDEX vuln_imports_started ON vuln_imports (started_at DESC, id)`,
    `CREATE TABLE vuln_advisories (
      id text PRIMARY KEY,
      vuln_key text NOT NULL,
      aliases text[] NOT NULL,
      modified timestamptz NOT NULL,
      published timestamptz,
      withdrawn timestamptz,
      summary text,
      severity text NOT NULL,
      severity_source text NOT NULL,
      cvss_score real,
      cvss_vector text,
      affected jsonb NOT NULL,
      import_id uuid REFERENCES vuln_imports (id),
      updated_at timestamptz NOT NULL
    )`,
    `CREATE INDEX vuln_advisories_key ON vuln_advisories (vuln_key)`,
    `CREATE INDEX vuln_advisories_modified ON vuln_advisories (modified)`,
    `CREATE TABLE vuln_affected_packages (
      package_key text NOT NULL,
      advisory_id text NOT NULL REFERENCES vuln_advisories (id) ON DELETE CASCADE,
      PRIMARY KEY (package_key, advisory_id)
    )`,
    `CREATE INDEX vuln_affected_packages_advisory ON vuln_affected_packages (advisory_id)`,
    // every id and alias of every record -> the vulnerability it belongs to
    `CREATE TABLE vuln_ids (
      id text NOT NULL,
      advisory_id text NOT NULL REFERENCES vuln_advisories (id) ON DELETE CASCADE,
      vuln_key text NOT NULL,
      PRIMARY KEY (id, advisory_id)
    )`,
    `CREATE INDEX vuln_ids_advisory ON vuln_ids (advisory_id)`,
    `CREATE TABLE vuln_kev (
      cve_id text PRIMARY KEY,
      vendor_project text NOT NULL,
      product text NOT NULL,
      vulnerability_name text NOT NULL,
      date_added text NOT NULL,
      due_date text,
      known_ransomware text,
      catalog_version text NOT NULL,
      import_id uuid NOT NULL REFERENCES vuln_imports (id),
      removed_at timestamptz
    )`,
    `CREATE TABLE sbom_components (
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      artifact_id uuid NOT NULL REFERENCES artifacts (id),
      ordinal integer NOT NULL,
      purl text NOT NULL,
      package_key text NOT NULL,
      ecosystem text,
      release text,
      name text NOT NULL,
      version text,
      licenses text[] NOT NULL DEFAULT '{}',
      hashes jsonb NOT NULL DEFAULT '{}'::jsonb,
      PRIMARY KEY (artifact_id, ordinal)
    )`,
    `CREATE INDEX sbom_components_purl ON sbom_components (tenant_id, purl)`,
    `CREATE INDEX sbom_components_key ON sbom_components (package_key)`,
    `CREATE TABLE vuln_findings (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      artifact_id uuid NOT NULL REFERENCES artifacts (id),
      vuln_key text NOT NULL,
      component_purl text NOT NULL,
      component_name text NOT NULL,
      component_version text,
      ecosystem text,
      advisory_ids text[] NOT NULL,
      aliases text[] NOT NULL,
      summary text,
      severity text NOT NULL,
      severity_rank smallint NOT NULL,
      severity_source text NOT NULL,
      cvss_score real,
      fixed_versions text[] NOT NULL,
      matched_by jsonb NOT NULL,
      known_exploited boolean NOT NULL DEFAULT false,
      kev_date_added text,
      exploited_signal_at timestamptz,
      vex_status text CHECK (vex_status IN ('not_affected', 'affected', 'fixed', 'under_investigation')),
      vex_justification text,
      vex_statement_id uuid,
      first_seen_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      UNIQUE (artifact_id, vuln_key, component_purl)
    )`,
    `CREATE INDEX vuln_findings_list ON vuln_findings (tenant_id, known_exploited DESC, severity_rank DESC, vuln_key, id)`,
    `CREATE INDEX vuln_findings_vuln ON vuln_findings (tenant_id, vuln_key)`,
    `CREATE INDEX vuln_findings_aliases ON vuln_findings USING gin (aliases)`,
    `CREATE INDEX vuln_findings_artifact ON vuln_findings (artifact_id)`,
    // known exploited, not yet signalled: the job looks for devices running these
    `CREATE INDEX vuln_findings_unsignalled ON vuln_findings (tenant_id) WHERE known_exploited AND exploited_signal_at IS NULL`,
    `CREATE TABLE vex_statements (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      artifact_id uuid NOT NULL REFERENCES artifacts (id),
      format text NOT NULL CHECK (format IN ('cyclonedx', 'openvex')),
      document_digest text NOT NULL,
      vuln_id text NOT NULL,
      component_purl text,
      status text NOT NULL CHECK (status IN ('not_affected', 'affected', 'fixed', 'under_investigation')),
      justification text,
      impact_statement text,
      action_statement text,
      statement_at timestamptz NOT NULL,
      recorded_at timestamptz NOT NULL,
      actor text NOT NULL
    )`,
    `CREATE INDEX vex_statements_artifact ON vex_statements (tenant_id, artifact_id, vuln_id, statement_at DESC, recorded_at DESC)`,
    // history is kept: no statement is ever rewritten or removed (pipeline_append_only: 0006)
    `CREATE TRIGGER vex_statements_append_only BEFORE UPDATE OR DELETE ON vex_statements
      FOR EACH ROW EXECUTE FUNCTION pipeline_append_only()`,
    `CREATE TRIGGER vex_statements_no_truncate BEFORE TRUNCATE ON vex_statements
      FOR EACH STATEMENT EXECUTE FUNCTION pipeline_append_only()`,
    `CREATE TABLE vuln_analysis_runs (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      tenant_id uuid NOT NULL REFERENCES tenants (id),
      reason text NOT NULL,
      import_id uuid REFERENCES vuln_imports (id),
      state text NOT NULL CHECK (state IN ('queued', 'running', 'completed')),
      artifacts_total integer NOT NULL DEFAULT 0,
      artifacts_done integer NOT NULL DEFAULT 0,
      cursor uuid,
      findings_added integer NOT NULL DEFAULT 0,
      findings_removed integer NOT NULL DEFAULT 0,
      signals integer NOT NULL DEFAULT 0,
      lease_owner text,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      completed_at timestamptz
    )`,
    `CREATE INDEX vuln_analysis_runs_pending ON vuln_analysis_runs (created_at) WHERE state <> 'completed'`,
    `CREATE INDEX vuln_analysis_runs_tenant ON vuln_analysis_runs (tenant_id, created_at DESC, id)`,

    // --- fleet indexes, kept by the database in the writer's transaction ---
    `CREATE TABLE vuln_device_software (
      tenant_id uuid NOT NULL,
      device_name text NOT NULL,
      component text NOT NULL,
      digest text NOT NULL,
      source text NOT NULL CHECK (source IN ('receipt', 'legacy')),
      source_id uuid NOT NULL,
      release_id uuid,
      observed_at timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, device_name, component)
    )`,
    `CREATE INDEX vuln_device_software_digest ON vuln_device_software (tenant_id, digest, device_name)`,
    `CREATE FUNCTION vuln_device_software_put(p_tenant uuid, p_device text, p_component text, p_digest text, p_source text, p_source_id uuid, p_release uuid, p_at timestamptz)
      RETURNS void LANGUAGE sql SET search_path FROM CURRENT AS $$
        INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, release_id, observed_at)
        VALUES (p_tenant, p_device, p_component, p_digest, p_source, p_source_id, p_release, p_at)
        ON CONFLICT (tenant_id, device_name, component) DO UPDATE
          SET digest = EXCLUDED.digest, source = EXCLUDED.source, source_id = EXCLUDED.source_id, release_id = EXCLUDED.release_id, observed_at = EXCLUDED.observed_at
          WHERE vuln_device_software.observed_at <= EXCLUDED.observed_at
      $$`,
    // spec §2.3 rule 1, rule 3: the resulting digest of each member (or of the single component) is what now runs
    `CREATE FUNCTION vuln_device_software_from_receipt() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     DECLARE m jsonb; c text;
     BEGIN
       IF jsonb_typeof(NEW.payload->'members') = 'array' THEN
         FOR m IN SELECT value FROM jsonb_array_elements(NEW.payload->'members') LOOP
           IF jsonb_typeof(m->'resulting_digest') = 'string' AND jsonb_typeof(m->'component') = 'string' THEN
             PERFORM vuln_device_software_put(NEW.tenant_id, NEW.device_name, m->>'component', m->>'resulting_digest', 'receipt', NEW.id, NEW.release_id, NEW.accepted_at);
           END IF;
         END LOOP;
       ELSIF jsonb_typeof(NEW.payload->'resulting_digest') = 'string' AND NEW.rollout_id IS NOT NULL THEN
         SELECT component INTO c FROM rollouts WHERE id = NEW.rollout_id;
         IF c IS NOT NULL THEN
           PERFORM vuln_device_software_put(NEW.tenant_id, NEW.device_name, c, NEW.payload->>'resulting_digest', 'receipt', NEW.id, NEW.release_id, NEW.accepted_at);
         END IF;
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER release_receipts_device_software AFTER INSERT ON release_receipts
      FOR EACH ROW EXECUTE FUNCTION vuln_device_software_from_receipt()`,
    // spec §2.3 rule 6: legacy status is device-reported; it counts where it is all there is (labelled by source)
    `CREATE FUNCTION vuln_device_software_from_legacy() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     DECLARE c text; d text;
     BEGIN
       IF NEW.status = 'installed' THEN
         SELECT r.component, a.digest INTO c, d FROM rollouts r JOIN artifacts a ON a.id = r.artifact_id WHERE r.id = NEW.rollout_id;
         IF c IS NOT NULL THEN
           PERFORM vuln_device_software_put(NEW.tenant_id, NEW.device_name, c, d, 'legacy', NEW.id, NULL, NEW.reported_at);
         END IF;
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER legacy_status_reports_device_software AFTER INSERT ON legacy_status_reports
      FOR EACH ROW EXECUTE FUNCTION vuln_device_software_from_legacy()`,
    `CREATE TABLE vuln_release_artifacts (
      tenant_id uuid NOT NULL,
      release_id uuid NOT NULL,
      product text NOT NULL,
      version text NOT NULL,
      component text NOT NULL,
      artifact_id uuid NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (release_id, component)
    )`,
    `CREATE INDEX vuln_release_artifacts_artifact ON vuln_release_artifacts (tenant_id, artifact_id)`,
    `CREATE INDEX vuln_release_artifacts_product ON vuln_release_artifacts (tenant_id, product, created_at)`,
    // the components of a release, from the signed payload of its stored DSSE envelope
    `CREATE FUNCTION vuln_release_artifacts_put(p_id uuid, p_tenant uuid, p_product text, p_version text, p_envelope bytea, p_at timestamptz)
      RETURNS void LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     DECLARE payload jsonb;
     BEGIN
       payload := convert_from(decode(convert_from(p_envelope, 'UTF8')::jsonb->>'payload', 'base64'), 'UTF8')::jsonb;
       INSERT INTO vuln_release_artifacts (tenant_id, release_id, product, version, component, artifact_id, created_at)
         SELECT p_tenant, p_id, p_product, p_version, c->>'name', (c->'artifact'->>'id')::uuid, p_at
         FROM jsonb_array_elements(payload->'components') AS c
         WHERE jsonb_typeof(c->'name') = 'string'
           AND (c->'artifact'->>'id') ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
         ON CONFLICT DO NOTHING;
     EXCEPTION WHEN others THEN
       -- releases are verified before they are stored; an envelope this index cannot read stays unindexed rather than refused
       RETURN;
     END $$`,
    `CREATE FUNCTION vuln_release_artifacts_from_release() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
     BEGIN
       PERFORM vuln_release_artifacts_put(NEW.id, NEW.tenant_id, NEW.product, NEW.version, NEW.envelope_bytes, NEW.created_at);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER releases_vuln_artifacts AFTER INSERT ON releases
      FOR EACH ROW EXECUTE FUNCTION vuln_release_artifacts_from_release()`,
    // what exists already
    `SELECT vuln_release_artifacts_put(id, tenant_id, product, version, envelope_bytes, created_at) FROM releases`,
    `INSERT INTO vuln_device_software (tenant_id, device_name, component, digest, source, source_id, release_id, observed_at)
       SELECT DISTINCT ON (tenant_id, device_name, component) tenant_id, device_name, component, digest, source, source_id, release_id, at FROM (
         SELECT r.tenant_id, r.device_name, m->>'component' AS component, m->>'resulting_digest' AS digest, 'receipt' AS source, r.id AS source_id, r.release_id, r.accepted_at AS at
           FROM release_receipts r, jsonb_array_elements(CASE WHEN jsonb_typeof(r.payload->'members') = 'array' THEN r.payload->'members' ELSE '[]'::jsonb END) AS m
           WHERE jsonb_typeof(m->'resulting_digest') = 'string'
         UNION ALL
         SELECT r.tenant_id, r.device_name, ro.component, r.payload->>'resulting_digest', 'receipt', r.id, r.release_id, r.accepted_at
           FROM release_receipts r JOIN rollouts ro ON ro.id = r.rollout_id
           WHERE jsonb_typeof(r.payload->'members') IS DISTINCT FROM 'array' AND jsonb_typeof(r.payload->'resulting_digest') = 'string'
         UNION ALL
         SELECT l.tenant_id, l.device_name, ro.component, a.digest, 'legacy', l.id, NULL::uuid, l.reported_at
           FROM legacy_status_reports l JOIN rollouts ro ON ro.id = l.rollout_id JOIN artifacts a ON a.id = ro.artifact_id
           WHERE l.status = 'installed'
       ) s ORDER BY tenant_id, device_name, component, at DESC`,
    // exposure walks these from the other side
    `CREATE INDEX artifacts_tenant_digest ON artifacts (tenant_id, digest)`,
    `CREATE INDEX artifact_sboms_tenant ON artifact_sboms (tenant_id, artifact_id)`,
    `CREATE INDEX device_group_members_device ON device_group_members (tenant_id, device_name)`,
  ]);
}
