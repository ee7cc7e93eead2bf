/**
 * The exposure of one vulnerability in a tenant's fleet, as the exposure API and a case's
 * linked evidence show it: the artifacts with a finding of it, the releases naming those still
 * open, the groups and a page of the devices running them, and per product the newest
 * published release that fixes it. What VEX has closed (not_affected, fixed) exposes nothing.
 */
import type { ExposedArtifactView } from './schemas.js';
import type { Db } from '../../store/tx.js';
import {
  deviceCountsByDigest,
  exposedArtifacts,
  exposedDevicePage,
  exposedDeviceTally,
  fixingReleases,
  releasesWithArtifacts,
  type ExposedArtifact,
} from './queries.js';

export interface VulnerabilityExposure {
  vulnerability: string;
  /** Each artifact with a finding of it, and how many devices run it. */
  artifacts: (ExposedArtifact & { devices: number })[];
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
  // exposure counts what VEX has not closed
  const open = artifacts.filter((a) => a.open_findings > 0);
  const digests = [...new Set(open.map((a) => a.digest))];
  // independent reads, each on its own pooled connection: the answer waits for the slowest, not the sum
  const [perDigest, devices, { total, groups }, { releases, fixing }] = await Promise.all([
    deviceCountsByDigest(db, tenantId, [...new Set(artifacts.map((a) => a.digest))]),
    devicePage.limit === 0 ? Promise.resolve([]) : exposedDevicePage(db, tenantId, digests, devicePage.limit, devicePage.offset),
    exposedDeviceTally(db, tenantId, digests),
    releasesWithArtifacts(
      db,
      tenantId,
      open.map((a) => a.artifact_id),
    ).then(async (releases) => ({ releases, fixing: await fixingReleases(db, tenantId, [...new Set(releases.map((r) => r.product))], vulnKey) })),
  ]);
  const products = [...new Set(releases.map((r) => r.product))];
  const fixedBy = products.flatMap((p) => {
    const newestExposed = Math.max(...releases.filter((r) => r.product === p).map((r) => r.created_at.getTime()));
    const f = fixing.find((r) => r.product === p && r.created_at.getTime() > newestExposed);
    return f ? [{ product: p, release_id: f.release_id, version: f.version, created_at: f.created_at.toISOString() }] : [];
  });
  return {
    vulnerability: vulnKey,
    artifacts: artifacts.map((a) => ({ ...a, devices: perDigest.get(a.digest) ?? 0 })),
    open_digests: digests,
    releases: releases.map((r) => ({ id: r.release_id, product: r.product, version: r.version, artifacts: r.artifacts })),
    fixed_by: fixedBy,
    groups,
    devices,
    devices_total: total,
  };
}

export function exposedArtifactView(a: ExposedArtifact & { devices: number }): ExposedArtifactView {
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
