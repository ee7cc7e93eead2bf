/**
 * What a case links to in the vulnerability records, read at the moment of asking: for each of
 * its vulnerability ids (CVE, GHSA, other aliases) the vulnerability it resolves to, the
 * tenant's findings naming any of them, each vulnerability's exposure in the fleet (artifacts,
 * releases, fixing releases, groups), the devices running the case's own artifacts, and the
 * affected devices and groups over all of it (devices running an artifact with an open finding
 * of a linked vulnerability, or an artifact the case names). `GET /cases/{id}/findings` shows
 * it; the case export writes it as `findings/findings-and-exposure.json`.
 */
import type { Db } from '../../store/tx.js';
import { findingView } from '../findings/views.js';
import { exposedArtifactView, vulnerabilityExposure } from '../vulnerabilities/exposure.js';
import { deviceCountsByDigest, exposedDevicePage, exposedDeviceTally, kevEntry, resolveVulnKey } from '../vulnerabilities/queries.js';
import { artifactsByIds, findingsNaming, type CaseRow } from './queries.js';
import type { LinkedEvidenceView } from './schemas.js';

/** How much of each list one answer holds (the totals are always given). */
export interface EvidenceCaps {
  findings: number;
  devices: number;
}

export const EVIDENCE_CAPS: EvidenceCaps = Object.freeze({ findings: 200, devices: 200 });

export async function linkedEvidence(
  db: Db,
  tenantId: string,
  c: Pick<CaseRow, 'vulnerability_ids' | 'artifact_ids'>,
  caps: EvidenceCaps = EVIDENCE_CAPS,
): Promise<LinkedEvidenceView> {
  const resolved = await Promise.all(c.vulnerability_ids.map(async (id) => ({ id, key: (await resolveVulnKey(db, id)) ?? null })));
  const findings = await findingsNaming(db, tenantId, c.vulnerability_ids, caps.findings);
  const keys = [...new Set([...resolved.flatMap((r) => (r.key === null ? [] : [r.key])), ...findings.rows.map((f) => f.vuln_key)])].sort();
  const exposures = await Promise.all(keys.map((key) => vulnerabilityExposure(db, tenantId, key, { limit: 0, offset: 0 })));
  const known = new Map(
    await Promise.all(
      keys.map(async (key) => {
        const aliases = [...new Set(findings.rows.filter((f) => f.vuln_key === key).flatMap((f) => f.aliases)), key];
        return [key, (await kevEntry(db, aliases)) !== undefined] as const;
      }),
    ),
  );

  const artifacts = await artifactsByIds(db, tenantId, c.artifact_ids);
  const running = await deviceCountsByDigest(db, tenantId, [...new Set(artifacts.map((a) => a.digest))]);
  const digests = [...new Set([...exposures.flatMap((e) => e.open_digests), ...artifacts.map((a) => a.digest)])];
  const [devices, { total, groups }] = await Promise.all([
    exposedDevicePage(db, tenantId, digests, caps.devices, 0),
    exposedDeviceTally(db, tenantId, digests),
  ]);

  return {
    vulnerability_ids: c.vulnerability_ids,
    vulnerabilities: resolved.map((r) => ({ id: r.id, vulnerability: r.key, known_exploited: r.key === null ? false : (known.get(r.key) ?? false) })),
    findings: findings.rows.map(findingView),
    findings_total: findings.total,
    exposure: exposures.map((e) => ({
      vulnerability: e.vulnerability,
      artifacts: e.artifacts.map(exposedArtifactView),
      releases: e.releases,
      fixed_by: e.fixed_by,
      groups: e.groups,
      devices: e.devices_total,
    })),
    artifacts: artifacts.map((a) => ({ id: a.id, name: a.name, version: a.version, digest: a.digest, devices: running.get(a.digest) ?? 0 })),
    affected: { devices, devices_total: total, groups },
  };
}

export type LinkedEvidence = Awaited<ReturnType<typeof linkedEvidence>>;
