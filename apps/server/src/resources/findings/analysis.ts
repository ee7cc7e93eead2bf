/**
 * Analysis of stored inventories inside a unit of work: match the artifacts' components
 * against the feeds (matching.ts), write the difference (new findings inserted, existing
 * ones rewritten in place so their id and first-seen time stay, findings no longer matched
 * deleted), and raise the known-exploited signal: a finding that is known exploited while
 * devices run its artifact gets `exploited_signal_at` and an audit row
 * `vuln-finding.known-exploited` in the same transaction (the Article 14 signal), once.
 */
import type { UnitOfWork } from '../unit-of-work.js';
import { matchInventory, type MatchStats } from './matching.js';
import {
  advisoriesForKeys,
  deleteFindings,
  sameFinding,
  devicesRunning,
  existingFindings,
  inventoryOf,
  kevFor,
  setSignal,
  unsignalledExploited,
  vexFor,
  writeFindings,
} from './queries.js';

export interface AnalysisResult extends MatchStats {
  /** findings of the artifacts after the analysis */
  findings: number;
  added: number;
  /** existing findings whose columns changed (rewritten in place) */
  updated: number;
  removed: number;
  signals: number;
}

export async function analyzeArtifacts(uow: UnitOfWork, artifactIds: readonly string[]): Promise<AnalysisResult> {
  const { trx, tenant, now } = uow;
  const components = await inventoryOf(trx, tenant, artifactIds);
  const advisories = await advisoriesForKeys(
    trx,
    components.map((c) => c.package_key),
  );
  const ids = [...advisories.values()].flat().flatMap((a) => [a.vuln_key, a.id, ...a.aliases]);
  const { findings, stats } = matchInventory(components, advisories, await kevFor(trx, ids), await vexFor(trx, tenant, artifactIds));
  const existing = new Map((await existingFindings(trx, tenant, artifactIds)).map((e) => [`${e.artifact_id}\n${e.vuln_key}\n${e.component_purl}`, e]));
  const inserts = [];
  const updates = [];
  for (const f of findings) {
    const key = `${f.artifact_id}\n${f.vuln_key}\n${f.component_purl}`;
    const old = existing.get(key);
    if (old) {
      if (!sameFinding(old, f)) updates.push({ id: old.id, draft: f });
      existing.delete(key);
    } else inserts.push(f);
  }
  await writeFindings(trx, tenant, inserts, updates, now);
  await deleteFindings(
    trx,
    [...existing.values()].map((e) => e.id),
  );
  const signals = await raiseSignals(uow, artifactIds);
  return { ...stats, findings: findings.length, added: inserts.length, updated: updates.length, removed: existing.size, signals };
}

/**
 * Known-exploited findings without their signal whose artifact devices run now (of the given
 * artifacts, or of the whole tenant): each gets the signal and an audit row.
 */
export async function raiseSignals(uow: UnitOfWork, artifactIds?: readonly string[], limit = 1000): Promise<number> {
  const due = await unsignalledExploited(uow.trx, uow.tenant, limit, artifactIds);
  if (due.length === 0) return 0;
  const devices = await devicesRunning(uow.trx, uow.tenant, [...new Set(due.map((d) => d.artifact_id))]);
  await setSignal(
    uow.trx,
    due.map((d) => d.id),
    uow.now,
  );
  for (const d of due) {
    await uow.audit({
      action: 'vuln-finding.known-exploited',
      target: `vuln-finding:${d.id}`,
      detail: { vulnerability: d.vuln_key, artifact_id: d.artifact_id, component: d.component_purl, devices: devices.get(d.artifact_id) ?? 0 },
    });
  }
  return due.length;
}
