/**
 * Feed tables (global: one copy serves every tenant): imports, OSV advisories with their
 * package keys and ids, the KEV catalog. Records replace older ones only when their
 * `modified` time is newer (imports are incremental and idempotent).
 */
import { normalizeUuid, type Digest } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { RangeSkip, VulnImportsTable } from '../../store/vuln-tables.js';
import type { Db } from '../../store/tx.js';
import type { KevEntry } from './kev.js';
import type { OsvAdvisory } from './osv.js';

export type ImportRow = Selectable<VulnImportsTable>;

export async function findImport(db: Db, kind: 'osv' | 'kev', digest: Digest): Promise<ImportRow | undefined> {
  return db.selectFrom('vuln_imports').selectAll().where('kind', '=', kind).where('digest', '=', digest).executeTakeFirst();
}

export async function getImport(db: Db, id: string, lock = false): Promise<ImportRow | undefined> {
  const uuid = normalizeUuid(id);
  if (uuid === undefined) return undefined;
  const q = db.selectFrom('vuln_imports').selectAll().where('id', '=', uuid);
  return (lock ? q.forUpdate() : q).executeTakeFirst();
}

export async function insertImport(
  db: Db,
  i: {
    kind: 'osv' | 'kev';
    source: string;
    digest: Digest;
    state: 'running' | 'completed';
    entries_total: number;
    catalog_version?: string | null;
    released_at?: Date | null;
    tenant_id: string;
    actor: string;
  },
  now: Date,
): Promise<ImportRow> {
  return db
    .insertInto('vuln_imports')
    .values({
      ...i,
      catalog_version: i.catalog_version ?? null,
      released_at: i.released_at ?? null,
      started_at: now,
      updated_at: now,
      completed_at: i.state === 'completed' ? now : null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export interface ImportProgress {
  entries_done: number;
  added: number;
  updated: number;
  unchanged: number;
  skipped: number;
  skipped_detail: { entry: string; reason: string }[];
  ranges_skipped: number;
  ranges_skipped_detail: RangeSkip[];
}

export async function advanceImport(db: Db, id: string, p: ImportProgress, now: Date, completed = false): Promise<void> {
  await db
    .updateTable('vuln_imports')
    .set({
      ...p,
      skipped_detail: JSON.stringify(p.skipped_detail),
      ranges_skipped_detail: JSON.stringify(p.ranges_skipped_detail),
      updated_at: now,
      ...(completed ? { state: 'completed' as const, completed_at: now } : {}),
    })
    .where('id', '=', id)
    .execute();
}

export async function listImports(
  db: Db,
  limit: number,
  offset: number,
): Promise<{ rows: ImportRow[]; total: number; counts: Record<'running' | 'completed', number> }> {
  const rows = await db.selectFrom('vuln_imports').selectAll().orderBy('started_at', 'desc').orderBy('id').limit(limit).offset(offset).execute();
  const byState = await db
    .selectFrom('vuln_imports')
    .select(['state', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('state')
    .execute();
  const counts = { running: 0, completed: 0 };
  for (const r of byState) counts[r.state] = Number(r.n);
  return { rows, total: counts.running + counts.completed, counts };
}

/** A stored record as a replacement needs it: its time, and the ids and package keys it is indexed under. */
export interface StoredAdvisory {
  modified: Date;
  ids: string[];
  keys: string[];
}

/** The stored version of each id (to decide added / updated / unchanged, and what a replacement removes). */
export async function storedAdvisories(db: Db, ids: string[]): Promise<Map<string, StoredAdvisory>> {
  if (ids.length === 0) return new Map();
  const r = await sql<{ id: string; modified: Date; aliases: string[]; keys: string[] }>`
    SELECT a.id, a.modified, a.aliases, array(SELECT DISTINCT e->>'key' FROM jsonb_array_elements(a.affected) e) AS keys
    FROM vuln_advisories a WHERE a.id = ANY(${ids}::text[])`.execute(db);
  return new Map(r.rows.map((x) => [x.id, { modified: new Date(x.modified), ids: [x.id, ...x.aliases], keys: x.keys }]));
}

/**
 * Writes whole advisories (replacing their package keys and ids); each one all or nothing
 * with the batch. A batch is at most five statements whatever its size: the rows travel as
 * one JSON document or one array per column, so neither side handles thousands of bind
 * parameters. The keys and ids a replaced record was indexed under are removed by their
 * primary keys (`replaced`: what `storedAdvisories` read), so no index by advisory is kept.
 */
export async function putAdvisories(
  db: Db,
  advisories: OsvAdvisory[],
  replaced: ReadonlyMap<string, StoredAdvisory>,
  importId: string,
  now: Date,
): Promise<void> {
  if (advisories.length === 0) return;
  const old = advisories.flatMap((a) => {
    const s = replaced.get(a.id);
    return s ? [{ id: a.id, s }] : [];
  });
  const oldKeys = old.flatMap(({ id, s }) => s.keys.map((k) => [k, id] as const));
  if (oldKeys.length > 0)
    await sql`DELETE FROM vuln_affected_packages WHERE (package_key, advisory_id) IN (
      SELECT * FROM unnest(${oldKeys.map((k) => k[0])}::text[], ${oldKeys.map((k) => k[1])}::text[]))`.execute(db);
  const oldIds = old.flatMap(({ id, s }) => s.ids.map((x) => [x, id] as const));
  if (oldIds.length > 0)
    await sql`DELETE FROM vuln_ids WHERE (id, advisory_id) IN (SELECT * FROM unnest(${oldIds.map((x) => x[0])}::text[], ${oldIds.map((x) => x[1])}::text[]))`.execute(
      db,
    );
  const rows = advisories.map((a) => ({
    id: a.id,
    vuln_key: a.vulnKey,
    aliases: a.aliases,
    modified: a.modified.toISOString(),
    published: a.published?.toISOString() ?? null,
    withdrawn: a.withdrawn?.toISOString() ?? null,
    summary: a.summary,
    severity: a.rating.severity,
    severity_source: a.rating.source,
    cvss_score: a.rating.score,
    cvss_vector: a.rating.vector,
    affected: a.affected,
  }));
  await sql`
    INSERT INTO vuln_advisories (id, vuln_key, aliases, modified, published, withdrawn, summary, severity, severity_source, cvss_score, cvss_vector, affected, import_id, updated_at)
    SELECT x.id, x.vuln_key, x.aliases, x.modified, x.published, x.withdrawn, x.summary, x.severity, x.severity_source, x.cvss_score, x.cvss_vector, x.affected,
      ${importId}::uuid, ${now}::timestamptz
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(id text, vuln_key text, aliases text[], modified timestamptz, published timestamptz,
      withdrawn timestamptz, summary text, severity text, severity_source text, cvss_score real, cvss_vector text, affected jsonb)
    ON CONFLICT (id) DO UPDATE SET vuln_key = excluded.vuln_key, aliases = excluded.aliases, modified = excluded.modified, published = excluded.published,
      withdrawn = excluded.withdrawn, summary = excluded.summary, severity = excluded.severity, severity_source = excluded.severity_source,
      cvss_score = excluded.cvss_score, cvss_vector = excluded.cvss_vector, affected = excluded.affected, import_id = excluded.import_id,
      updated_at = excluded.updated_at`.execute(db);
  const keys = advisories.flatMap((a) => [...new Set(a.affected.map((x) => x.key))].map((k) => [k, a.id] as const));
  if (keys.length > 0)
    await sql`INSERT INTO vuln_affected_packages (package_key, advisory_id)
      SELECT * FROM unnest(${keys.map((k) => k[0])}::text[], ${keys.map((k) => k[1])}::text[])
      ON CONFLICT DO NOTHING`.execute(db);
  const idRows = advisories.flatMap((a) => [a.id, ...a.aliases].map((id) => [id, a.id, a.vulnKey] as const));
  await sql`INSERT INTO vuln_ids (id, advisory_id, vuln_key)
    SELECT * FROM unnest(${idRows.map((r) => r[0])}::text[], ${idRows.map((r) => r[1])}::text[], ${idRows.map((r) => r[2])}::text[])
    ON CONFLICT DO NOTHING`.execute(db);
}

export interface KevCounts {
  added: number;
  updated: number;
  unchanged: number;
  removed: number;
}

/** Upserts the catalog's entries; when it is the newest catalog, entries it no longer lists are marked removed. */
export async function putKevCatalog(db: Db, entries: KevEntry[], catalogVersion: string, importId: string, newest: boolean, now: Date): Promise<KevCounts> {
  const existing = new Map((await db.selectFrom('vuln_kev').selectAll().execute()).map((r) => [r.cve_id, r]));
  const counts: KevCounts = { added: 0, updated: 0, unchanged: 0, removed: 0 };
  const rows = entries.map((e) => ({
    cve_id: e.cveID,
    vendor_project: e.vendorProject,
    product: e.product,
    vulnerability_name: e.vulnerabilityName,
    date_added: e.dateAdded,
    due_date: e.dueDate ?? null,
    known_ransomware: e.knownRansomwareCampaignUse ?? null,
    catalog_version: catalogVersion,
    import_id: importId,
    removed_at: null,
  }));
  for (const r of rows) {
    const old = existing.get(r.cve_id);
    if (!old) counts.added++;
    else if (old.removed_at !== null || old.date_added !== r.date_added || old.due_date !== r.due_date || old.known_ransomware !== r.known_ransomware)
      counts.updated++;
    else counts.unchanged++;
  }
  for (let i = 0; i < rows.length; i += 1000) {
    await db
      .insertInto('vuln_kev')
      .values(rows.slice(i, i + 1000))
      .onConflict((oc) =>
        oc.column('cve_id').doUpdateSet((eb) => ({
          vendor_project: eb.ref('excluded.vendor_project'),
          product: eb.ref('excluded.product'),
          vulnerability_name: eb.ref('excluded.vulnerability_name'),
          date_added: eb.ref('excluded.date_added'),
          due_date: eb.ref('excluded.due_date'),
          known_ransomware: eb.ref('excluded.known_ransomware'),
          catalog_version: eb.ref('excluded.catalog_version'),
          import_id: eb.ref('excluded.import_id'),
          removed_at: null,
        })),
      )
      .execute();
  }
  if (newest) {
    const listed = new Set(entries.map((e) => e.cveID));
    const gone = [...existing.values()].filter((r) => r.removed_at === null && !listed.has(r.cve_id)).map((r) => r.cve_id);
    for (let i = 0; i < gone.length; i += 1000)
      await db
        .updateTable('vuln_kev')
        .set({ removed_at: now })
        .where('cve_id', 'in', gone.slice(i, i + 1000))
        .execute();
    counts.removed = gone.length;
  }
  return counts;
}

/** The newest catalog release imported so far (KEV is incremental by `dateReleased`). */
export async function newestKevRelease(db: Db): Promise<Date | undefined> {
  const r = await db
    .selectFrom('vuln_imports')
    .select((eb) => eb.fn.max('released_at').as('at'))
    .where('kind', '=', 'kev')
    .where('state', '=', 'completed')
    .executeTakeFirst();
  return r?.at ?? undefined;
}

/** Freshness of the feeds: per OSV source and for KEV, the last import and the newest record time. */
export async function feedFreshness(db: Db): Promise<{
  osv: { source: string; last_import_at: Date | null; imports: number }[];
  advisories: number;
  newest_modified: Date | null;
  kev: { catalog_version: string | null; entries: number; last_import_at: Date | null };
}> {
  const osv = await db
    .selectFrom('vuln_imports')
    .select(['source', (eb) => eb.fn.max('completed_at').as('last'), (eb) => eb.fn.countAll<string>().as('n')])
    .where('kind', '=', 'osv')
    .where('state', '=', 'completed')
    .groupBy('source')
    .orderBy('source')
    .execute();
  const adv = await db
    .selectFrom('vuln_advisories')
    .select([(eb) => eb.fn.countAll<string>().as('n'), (eb) => eb.fn.max('modified').as('newest')])
    .executeTakeFirstOrThrow();
  const kev = await db
    .selectFrom('vuln_imports')
    .select(['catalog_version', 'completed_at'])
    .where('kind', '=', 'kev')
    .where('state', '=', 'completed')
    .orderBy('completed_at', 'desc')
    .executeTakeFirst();
  const kevCount = await db
    .selectFrom('vuln_kev')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return {
    osv: osv.map((r) => ({ source: r.source, last_import_at: r.last ?? null, imports: Number(r.n) })),
    advisories: Number(adv.n),
    newest_modified: adv.newest ?? null,
    kev: { catalog_version: kev?.catalog_version ?? null, entries: Number(kevCount.n), last_import_at: kev?.completed_at ?? null },
  };
}
