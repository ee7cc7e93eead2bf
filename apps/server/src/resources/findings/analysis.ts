/**
 * Analysis of stored inventories inside a unit of work: match the artifacts' components
 * against the feeds (matching.ts), write the difference (new findings inserted, existing
 * ones rewritten in place so their id and first-seen time stay, findings no longer matched
 * deleted), and raise the known-exploited signal: a finding that is known exploited while
 * devices run its artifact gets `exploited_signal_at` and an audit row
 * `vuln-finding.known-exploited` in the same transaction (the Article 14 signal), once. A
 * finding removed because a record it came from is now withdrawn gets an audit row
 * `vuln-finding.withdrawn` in the same transaction: nothing vanishes without a trace.
 */
import type { Db } from '../../store/tx.js';
import type { UnitOfWork } from '../unit-of-work.js';
import { matchInventory, type CandidateAdvisory, type MatchStats } from './matching.js';
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
  withdrawnAdvisories,
  writeFindings,
  type FindingRow,
} from './queries.js';

export interface AnalysisResult extends MatchStats {
  /** findings of the artifacts after the analysis */
  findings: number;
  added: number;
  /** existing findings whose columns changed (rewritten in place) */
  updated: number;
  removed: number;
  /** of the removed, those a withdrawn record had raised */
  withdrawn: number;
  signals: number;
}

/**
 * Advisories by package key, kept across the batches of one analysis run: artifacts share
 * most of their packages, so each key is read from the feeds once per run rather than once
 * per batch. Bounded (cleared when full). A record a concurrent import rewrites mid-run is
 * matched again by the run that import queues when it completes.
 */
export class AdvisoryCache {
  private readonly byKey = new Map<string, readonly CandidateAdvisory[]>();
  constructor(private readonly maxKeys = 50_000) {}

  async read(db: Db, keys: readonly string[]): Promise<Map<string, readonly CandidateAdvisory[]>> {
    const missing = [...new Set(keys)].filter((k) => !this.byKey.has(k));
    if (missing.length > 0) {
      const read = await advisoriesForKeys(db, missing);
      if (this.byKey.size + missing.length > this.maxKeys) this.byKey.clear();
      for (const k of missing) this.byKey.set(k, read.get(k) ?? []);
    }
    const out = new Map<string, readonly CandidateAdvisory[]>();
    for (const k of keys) {
      const list = this.byKey.get(k);
      if (list !== undefined && list.length > 0) out.set(k, list);
    }
    return out;
  }

  private readonly kevByCve = new Map<string, string | null>();

  /** KEV entries among the ids (CVE -> date added), each CVE read once per run like the records. */
  async kev(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
    const missing = [...new Set(ids)].filter((id) => id.startsWith('CVE-') && !this.kevByCve.has(id));
    if (missing.length > 0) {
      const read = await kevFor(db, missing);
      if (this.kevByCve.size + missing.length > this.maxKeys * 4) this.kevByCve.clear();
      for (const id of missing) this.kevByCve.set(id, read.get(id) ?? null);
    }
    const out = new Map<string, string>();
    for (const id of ids) {
      const added = this.kevByCve.get(id);
      if (added !== undefined && added !== null) out.set(id, added);
    }
    return out;
  }
}

export async function analyzeArtifacts(uow: UnitOfWork, artifactIds: readonly string[], cache: AdvisoryCache = new AdvisoryCache()): Promise<AnalysisResult> {
  const { trx, tenant, now } = uow;
  const components = await inventoryOf(trx, tenant, artifactIds);
  const advisories = await cache.read(
    trx,
    components.map((c) => c.package_key),
  );
  const ids = [...advisories.values()].flat().flatMap((a) => [a.vuln_key, a.id, ...a.aliases]);
  const { findings, stats } = matchInventory(components, advisories, await cache.kev(trx, ids), await vexFor(trx, tenant, artifactIds));
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
  const removed = [...existing.values()];
  await deleteFindings(
    trx,
    removed.map((e) => e.id),
  );
  const withdrawn = await auditWithdrawn(uow, removed);
  const signals = await raiseSignals(uow, artifactIds);
  return { ...stats, findings: findings.length, added: inserts.length, updated: updates.length, removed: removed.length, withdrawn, signals };
}

/** An audit row for each removed finding a now withdrawn record had raised (the ids of those records in `withdrawn`). */
async function auditWithdrawn(uow: UnitOfWork, removed: readonly FindingRow[]): Promise<number> {
  const withdrawn = await withdrawnAdvisories(
    uow.trx,
    removed.flatMap((r) => r.advisory_ids),
  );
  let n = 0;
  for (const r of removed) {
    const ids = r.advisory_ids.filter((id) => withdrawn.has(id));
    if (ids.length === 0) continue;
    n++;
    await uow.audit({
      action: 'vuln-finding.withdrawn',
      target: `vuln-finding:${r.id}`,
      detail: { vulnerability: r.vuln_key, artifact_id: r.artifact_id, component: r.component_purl, withdrawn: ids },
    });
  }
  return n;
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
