/**
 * Feed imports. An OSV archive is imported in batches, each its own unit of work with its
 * audit row (`vuln-feed.import.batch`), between a start (`vuln-feed.import.start`: the
 * import row) and a completion (`vuln-feed.import.complete`: analysis queued for every
 * tenant); the import row's `entries_done` is the cursor a re-POST of the same bytes
 * resumes from after a crash. A batch is checked against the cursor under the row's lock,
 * so two processes importing the same file never apply a record twice. Records replace
 * stored ones only when newer (`modified`): imports are incremental and idempotent. The
 * KEV catalog is one unit of work (`vuln-feed.kev.import`).
 */
import type { Digest } from '@svc/release-core';
import type { Command } from '../unit-of-work.js';
import { enqueueAnalysisForAllTenants } from '../vuln-analysis/queries.js';
import type { KevCatalog } from './kev.js';
import type { OsvAdvisory } from './osv.js';
import {
  advanceImport,
  storedAdvisories,
  findImport,
  getImport,
  insertImport,
  newestKevRelease,
  putAdvisories,
  putKevCatalog,
  type ImportRow,
} from './queries.js';
import { SERVER_LIMITS } from '../../limits.js';

export interface StartedImport {
  row: ImportRow;
  /** created now (false: the same bytes were imported or started before) */
  created: boolean;
}

/** POST /vuln-feeds/osv, first step: the import row, or the existing one for the same bytes. */
export const startOsvImport: Command<{ source: string; digest: Digest; entries: number }, StartedImport> = async (uow, i) => {
  const existing = await findImport(uow.trx, 'osv', i.digest);
  if (existing) return { row: existing, created: false };
  // the same bytes started concurrently: a unique violation; the caller retries and resumes
  const row = await insertImport(
    uow.trx,
    { kind: 'osv', source: i.source, digest: i.digest, state: 'running', entries_total: i.entries, tenant_id: uow.tenant, actor: uow.actor.name },
    uow.now,
  );
  await uow.audit({
    action: 'vuln-feed.import.start',
    target: `vuln-import:${row.id}`,
    detail: { kind: 'osv', source: i.source, digest: i.digest, entries: i.entries },
  });
  return { row, created: true };
};

export type BatchItem = { index: number; name: string; advisory: OsvAdvisory } | { index: number; name: string; skip: string };

/** One batch of records [from, to): written whole with its audit row, or not at all. */
export const importOsvBatch: Command<{ importId: string; from: number; to: number; items: BatchItem[] }, ImportRow> = async (uow, b) => {
  const row = (await getImport(uow.trx, b.importId, true))!;
  // another process (or an earlier attempt) got further: apply only what it has not
  const items = b.items.filter((x) => x.index >= row.entries_done);
  if (items.length === 0 || row.state === 'completed') return row;
  const p = {
    entries_done: Math.max(row.entries_done, b.to),
    added: row.added,
    updated: row.updated,
    unchanged: row.unchanged,
    skipped: row.skipped,
    skipped_detail: [...row.skipped_detail],
    ranges_skipped: row.ranges_skipped,
    ranges_skipped_detail: [...row.ranges_skipped_detail],
  };
  const counts = { added: 0, updated: 0, unchanged: 0, skipped: 0, ranges_skipped: 0 };
  const skip = (entry: string, reason: string) => {
    counts.skipped++;
    if (p.skipped_detail.length < SERVER_LIMITS.feeds.keptSkipReasons) p.skipped_detail.push({ entry, reason });
  };
  // the newest version of each id in the batch (an archive may carry an id twice)
  const newest = new Map<string, OsvAdvisory>();
  for (const x of items) {
    if ('skip' in x) skip(x.name, x.skip);
    else {
      const prev = newest.get(x.advisory.id);
      if (prev && prev.modified >= x.advisory.modified) counts.unchanged++;
      else {
        if (prev) counts.unchanged++;
        newest.set(x.advisory.id, x.advisory);
      }
    }
  }
  const stored = await storedAdvisories(uow.trx, [...newest.keys()]);
  const write: OsvAdvisory[] = [];
  for (const a of newest.values()) {
    const at = stored.get(a.id);
    if (at === undefined) counts.added++;
    else if (at.modified < a.modified) counts.updated++;
    else {
      counts.unchanged++;
      continue;
    }
    write.push(a);
    // the ranges of a written record that matching skips: counted, the first ones named
    for (const r of a.rangeSkips) {
      counts.ranges_skipped++;
      if (p.ranges_skipped_detail.length < SERVER_LIMITS.feeds.keptSkipReasons) p.ranges_skipped_detail.push(r);
    }
  }
  await putAdvisories(uow.trx, write, stored, row.id, uow.now);
  p.added += counts.added;
  p.updated += counts.updated;
  p.unchanged += counts.unchanged;
  p.skipped += counts.skipped;
  p.ranges_skipped += counts.ranges_skipped;
  await advanceImport(uow.trx, row.id, p, uow.now);
  await uow.audit({ action: 'vuln-feed.import.batch', target: `vuln-import:${row.id}`, detail: { from: b.from, to: b.to, ...counts } });
  return (await getImport(uow.trx, row.id))!;
};

/** Last step: the import is complete and every tenant's inventories are queued for re-analysis. */
export const completeOsvImport: Command<{ importId: string }, ImportRow> = async (uow, { importId }) => {
  const row = (await getImport(uow.trx, importId, true))!;
  if (row.state === 'completed') return row;
  await advanceImport(
    uow.trx,
    row.id,
    {
      entries_done: row.entries_total,
      added: row.added,
      updated: row.updated,
      unchanged: row.unchanged,
      skipped: row.skipped,
      skipped_detail: row.skipped_detail,
      ranges_skipped: row.ranges_skipped,
      ranges_skipped_detail: row.ranges_skipped_detail,
    },
    uow.now,
    true,
  );
  const runs = await enqueueAnalysisForAllTenants(uow.trx, `osv-import:${row.id}`, row.id, uow.now);
  await uow.audit({
    action: 'vuln-feed.import.complete',
    target: `vuln-import:${row.id}`,
    detail: {
      source: row.source,
      digest: row.digest,
      added: row.added,
      updated: row.updated,
      unchanged: row.unchanged,
      skipped: row.skipped,
      ranges_skipped: row.ranges_skipped,
      analysis_runs: runs,
    },
  });
  return (await getImport(uow.trx, row.id))!;
};

/** POST /vuln-feeds/kev: the whole catalog in one unit of work (idempotent by its bytes). */
export const importKevCatalog: Command<{ source: string; digest: Digest; catalog: KevCatalog }, StartedImport & { removed: number }> = async (uow, i) => {
  const existing = await findImport(uow.trx, 'kev', i.digest);
  if (existing) return { row: existing, created: false, removed: 0 };
  const newestBefore = await newestKevRelease(uow.trx);
  const newest = newestBefore === undefined || i.catalog.dateReleased >= newestBefore;
  const row = await insertImport(
    uow.trx,
    {
      kind: 'kev',
      source: i.source,
      digest: i.digest,
      state: 'completed',
      entries_total: i.catalog.entries.length,
      catalog_version: i.catalog.catalogVersion,
      released_at: i.catalog.dateReleased,
      tenant_id: uow.tenant,
      actor: uow.actor.name,
    },
    uow.now,
  );
  const c = await putKevCatalog(uow.trx, i.catalog.entries, i.catalog.catalogVersion, row.id, newest, uow.now);
  await advanceImport(
    uow.trx,
    row.id,
    {
      entries_done: i.catalog.entries.length,
      added: c.added,
      updated: c.updated,
      unchanged: c.unchanged,
      skipped: 0,
      skipped_detail: [],
      ranges_skipped: 0,
      ranges_skipped_detail: [],
    },
    uow.now,
    true,
  );
  const runs = await enqueueAnalysisForAllTenants(uow.trx, `kev-import:${row.id}`, row.id, uow.now);
  await uow.audit({
    action: 'vuln-feed.kev.import',
    target: `vuln-import:${row.id}`,
    detail: { catalog_version: i.catalog.catalogVersion, digest: i.digest, ...c, newest, analysis_runs: runs },
  });
  return { row: (await getImport(uow.trx, row.id))!, created: true, removed: c.removed };
};

/** Runs one command in its own unit of work (a route passes `execute` bound to its request). */
export type RunCommand = <I, O>(command: Command<I, O>, input: I) => Promise<O>;
