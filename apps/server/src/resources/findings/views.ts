/** A finding as the finding lists, a case's linked findings and the case export show it (schemas.ts `Finding`). */
import { iso } from '../../http/schemas.js';
import type { FindingListRow } from './queries.js';
import type { FindingView } from './schemas.js';

export function findingView(f: FindingListRow): FindingView {
  return {
    id: f.id,
    vulnerability: f.vuln_key,
    aliases: f.aliases,
    advisories: f.advisory_ids,
    summary: f.summary,
    severity: f.severity,
    severity_source: f.severity_source,
    cvss_score: f.cvss_score,
    artifact: { id: f.artifact_id, name: f.artifact_name, version: f.artifact_version, digest: f.artifact_digest },
    component: { purl: f.component_purl, name: f.component_name, version: f.component_version, ecosystem: f.ecosystem },
    fixed_versions: f.fixed_versions,
    record_fixed_versions: f.record_fixed_versions,
    matched_by: f.matched_by,
    known_exploited: f.known_exploited,
    kev_date_added: f.kev_date_added,
    known_exploited_in_fleet_at: iso(f.exploited_signal_at),
    vex: { status: f.vex_status, justification: f.vex_justification, statement_id: f.vex_statement_id },
    open: f.vex_status === null || f.vex_status === 'affected' || f.vex_status === 'under_investigation',
    first_seen_at: iso(f.first_seen_at),
    updated_at: iso(f.updated_at),
  };
}
