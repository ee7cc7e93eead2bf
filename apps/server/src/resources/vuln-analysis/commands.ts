/**
 * One batch of a leased analysis run, in one unit of work as `system:vuln-analysis`: the
 * next artifacts re-matched (findings/analysis.ts), the run's cursor and counts advanced and
 * its lease renewed; the last batch completes the run with its audit row
 * (`vuln-analysis.complete`). A process that lost its lease changes nothing.
 */
import { analyzeArtifacts, raiseSignals, type AdvisoryCache } from '../findings/analysis.js';
import type { Command } from '../unit-of-work.js';
import { advanceRun, lockRun, nextArtifacts, type RunRow } from './queries.js';

/** A batch: at most this many artifacts, and no more components than ANALYSIS_BATCH_COMPONENTS (unless one artifact alone has more). */
export const ANALYSIS_BATCH_ARTIFACTS = 1000;
export const ANALYSIS_BATCH_COMPONENTS = 25_000;
export const LEASE_MS = 120_000;

/** `advisories`: the feed records read by the run's earlier batches in this process. */
export const analyzeRunBatch: Command<{ runId: string; owner: string; advisories?: AdvisoryCache }, RunRow | undefined> = async (
  uow,
  { runId, owner, advisories },
) => {
  const run = await lockRun(uow.trx, runId);
  if (!run || run.state !== 'running' || run.lease_owner !== owner) return undefined;
  const { ids, more } = await nextArtifacts(uow.trx, uow.tenant, run.cursor, ANALYSIS_BATCH_ARTIFACTS, ANALYSIS_BATCH_COMPONENTS);
  const r = ids.length > 0 ? await analyzeArtifacts(uow, ids, advisories) : { added: 0, removed: 0, withdrawn: 0, signals: 0 };
  const next = {
    cursor: ids.at(-1) ?? run.cursor,
    artifacts_done: run.artifacts_done + ids.length,
    findings_added: run.findings_added + r.added,
    findings_removed: run.findings_removed + r.removed,
    findings_withdrawn: run.findings_withdrawn + r.withdrawn,
    signals: run.signals + r.signals,
  };
  if (!more) {
    await advanceRun(uow.trx, runId, { ...next, lease_until: null, state: 'completed', completed_at: uow.now });
    await uow.audit({
      action: 'vuln-analysis.complete',
      target: `vuln-analysis-run:${runId}`,
      detail: {
        reason: run.reason,
        artifacts: next.artifacts_done,
        findings_added: next.findings_added,
        findings_removed: next.findings_removed,
        findings_withdrawn: next.findings_withdrawn,
        signals: next.signals,
      },
    });
  } else {
    await advanceRun(uow.trx, runId, { ...next, lease_until: new Date(uow.now.getTime() + LEASE_MS) });
  }
  return { ...run, ...next, state: more ? 'running' : 'completed' };
};

/** Signals for known-exploited findings whose artifacts devices started running since (the sweep). */
export const signalSweep: Command<Record<string, never>, number> = async (uow) => raiseSignals(uow);
