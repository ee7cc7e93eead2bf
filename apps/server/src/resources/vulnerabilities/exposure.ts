/**
 * The exposure of one vulnerability in a tenant's fleet, as the exposure API and a case's
 * linked evidence show it: the artifacts with a finding of it, the releases naming those still
 * open, the groups and a page of the devices running them, and per product the newest
 * published release that fixes it. What VEX has closed (not_affected, fixed) exposes nothing.
 */
import type { Db } from '../../store/tx.js';
import { exposedArtifacts, exposedDevicePage, exposedGroups, fixingReleases, releasesWithArtifacts, type ExposedArtifact } from './queries.js';

export interface VulnerabilityExposure {
  vulnerability: string;
  artifacts: ExposedArtifact[];
  /** SHA-256 digests of the artifacts with an open finding: what exposed devices run. */
  open_digests: string[];
  releases: { id: string; product: string; version: string; artifacts: string[] }[];
  fixed_by: { product: string; release_id: string; version: string; created_at: string }[];
  groups: { id: string; name: string; devices: number }[];
  devices: { name: string; components: string[]; source: string }[];
  /** Exposed devices in all (the page above holds at most `limit`). */
  devices_total: number;
}

export async function vulnerabilityExposure(
  db: Db,
  tenantId: string,
  vulnKey: string,
  devicePage: { limit: number; offset: number },
): Promise<VulnerabilityExposure> {
  const artifacts = await exposedArtifacts(db, tenantId, vulnKey);
  const open = artifacts.filter((a) => a.open_findings > 0);
  const digests = [...new Set(open.map((a) => a.digest))];
  const devices = await exposedDevicePage(db, tenantId, digests, devicePage.limit, devicePage.offset);
  const groups = await exposedGroups(db, tenantId, digests);
  const releases = await releasesWithArtifacts(
    db,
    tenantId,
    open.map((a) => a.artifact_id),
  );
  const products = [...new Set(releases.map((r) => r.product))];
  const fixing = await fixingReleases(db, tenantId, products, vulnKey);
  const fixedBy = products.flatMap((p) => {
    const newestExposed = Math.max(...releases.filter((r) => r.product === p).map((r) => r.created_at.getTime()));
    const f = fixing.find((r) => r.product === p && r.created_at.getTime() > newestExposed);
    return f ? [{ product: p, release_id: f.release_id, version: f.version, created_at: f.created_at.toISOString() }] : [];
  });
  return {
    vulnerability: vulnKey,
    artifacts,
    open_digests: digests,
    releases: releases.map((r) => ({ id: r.release_id, product: r.product, version: r.version, artifacts: r.artifacts })),
    fixed_by: fixedBy,
    groups,
    devices: devices.devices,
    devices_total: devices.total,
  };
}

export function exposedArtifactView(a: ExposedArtifact) {
  return {
    id: a.artifact_id,
    name: a.name,
    version: a.version,
    digest: a.digest,
    findings: a.findings,
    open_findings: a.open_findings,
    components: a.components,
    fixed_versions: a.fixed_versions,
    vex_statuses: a.vex_statuses,
    devices: a.devices,
  };
}
