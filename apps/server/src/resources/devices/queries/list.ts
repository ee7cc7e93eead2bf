import { sql, type Kysely, type RawBuilder } from 'kysely';
import { likeContains } from '../../../http/pagination.js';
import type { Database } from '../../../store/database.js';
import { PREPARE_MARK } from '../../../store/prepared.js';
import type { AnchorList, DeviceListAnchors } from '../anchors.js';
import type { DeviceSearchCache } from '../search-cache.js';
import type { DeviceRecord, DeviceStatus } from './identity.js';

/** The REST list of devices (`GET /devices`): its page, `total` and `counts`, and the tenant's counts alone. */
export type DeviceCounts = Record<DeviceStatus, number>;

/** spec §8 `counts`: read from the trigger-maintained table, O(statuses), never a scan. */
export async function deviceCounts(db: Kysely<Database>, tenantId: string): Promise<DeviceCounts> {
  const rows = await db.selectFrom('device_counts').select(['status', 'n']).where('tenant_id', '=', tenantId).execute();
  const counts: DeviceCounts = { online: 0, offline: 0, decommissioned: 0 };
  for (const r of rows) if (r.status in counts) counts[r.status as DeviceStatus] = Number(r.n);
  return counts;
}

/**
 * `GET /devices` orders: by name (the default), by when last seen, or by status, name
 * breaking ties; a leading `-` is the exact reverse order (so devices never seen, whose
 * `last_seen` is null, come last by `last_seen` and first by `-last_seen`).
 */
export const DEVICE_SORTS = ['name', '-name', 'last_seen', '-last_seen', 'status', '-status'] as const;
export type DeviceSort = (typeof DEVICE_SORTS)[number];

const SORT_ORDER: Record<Exclude<DeviceSort, 'name'>, RawBuilder<unknown>> = {
  '-name': sql`name DESC`,
  last_seen: sql`last_seen ASC NULLS LAST, name ASC`,
  '-last_seen': sql`last_seen DESC NULLS FIRST, name DESC`,
  status: sql`status ASC, name ASC`,
  '-status': sql`status DESC, name DESC`,
};

export interface DeviceFilter {
  status?: DeviceStatus | undefined;
  q?: string | undefined;
  /** A device filter (docs/device-filter.md): its text (the anchors' key) and its compiled condition. */
  filter?: { text: string; where: RawBuilder<unknown> } | undefined;
  /** default `name` (the fast path below) */
  sort?: DeviceSort | undefined;
  limit: number;
  offset: number;
}

/** The fields a list page carries (spec §8 keeps the page small). */
export type DeviceListItem = Pick<DeviceRecord, 'name' | 'status' | 'profile' | 'agent_version' | 'last_seen' | 'cert_fingerprint' | 'created_at'>;

/** One result row: the tenant's counts, the filtered total and the page as JSON text. */
interface ListRow {
  online: string;
  offline: string;
  decommissioned: string;
  total: string | null;
  devices: string;
  /** The tenant's list version in the statement's snapshot (offset pages only). */
  version?: string;
}

/** A page as the API sends it: `devicesJson` is the JSON array of list items, ready to send. */
export interface DevicePage {
  devicesJson: string;
  total: number;
  counts: DeviceCounts;
}

/**
 * A page of devices ordered by name, `counts` of the whole tenant and `total` of the
 * filtered set, in ONE round trip and ONE result row (the list is the hottest read of the
 * console and of fleet scripts):
 * - counts come from the trigger-kept `device_counts` (never a scan), and so does `total`
 *   without `q`;
 * - with `q`, total is a count the trigram index on `name` serves; `q` is matched
 *   literally (LIKE wildcards escaped) and case-insensitively;
 * - the page comes back as ONE text, the items' stored JSON (`list_json`, migration 0008)
 *   joined by commas, so neither driver decodes 50 rows of 7 fields into objects only for
 *   the server to encode them again, and the database formats nothing per read.
 *   Measured: on PGlite a 50-row page of 7 columns cost 920 us to fetch and one text of the
 *   same page 530 us; on PostgreSQL the server's CPU per request fell by about a third
 *   (docs/server.md, "Device list performance");
 * - the first page of the whole list or of a status is a named prepared statement
 *   (PREPARE_MARK): parsed and planned once per connection (PostgreSQL) or session (PGlite);
 * - a deep page (offset >= anchors.every) starts its walk at the nearest per-process anchor
 *   (resources/devices/anchors.ts) and is used only if the list version read with it still is
 *   the anchors' version; otherwise it walks from the start and anchors are rebuilt;
 * - a `q` page (no device filter, offset below anchors.every) is `searchPage`: its names and
 *   total are reused from `searches` while the list version read in the same statement is
 *   theirs, so a repeated search costs an index lookup per item, not a walk and a count.
 */
export async function listDevices(
  db: Kysely<Database>,
  tenantId: string,
  filter: DeviceFilter,
  anchors?: DeviceListAnchors,
  searches?: DeviceSearchCache,
): Promise<DevicePage> {
  const conditions = [sql`tenant_id = ${tenantId}`];
  if (filter.status !== undefined) conditions.push(sql`status = ${filter.status}`);
  const hasQ = filter.q !== undefined && filter.q !== '';
  // Names are lowercase by the table's CHECK (contracts §4), so a case-sensitive LIKE on the
  // lowercased needle is exactly ILIKE, and much cheaper per row when a scan is chosen.
  if (hasQ) conditions.push(sql`name LIKE ${likeContains(filter.q!.toLowerCase())} ESCAPE '\\'`);
  if (filter.filter !== undefined) conditions.push(filter.filter.where);
  const where = sql.join(conditions, sql` AND `);
  // a filter narrows the list like `q`: the total is counted, the statement planned with its values
  const narrowed = hasQ || filter.filter !== undefined;
  if (filter.sort !== undefined && filter.sort !== 'name') return sortedPage(db, tenantId, filter, where, narrowed, SORT_ORDER[filter.sort]);
  // No anchors under a filter: the list version follows names and statuses only, so a tag or an
  // attribute changing would leave anchors of a filtered list silently stale.
  const deep = anchors !== undefined && filter.filter === undefined && filter.offset >= anchors.every;
  const key = deviceListKey(tenantId, filter);
  if (hasQ && searches !== undefined && filter.filter === undefined && !deep) return searchPage(db, tenantId, filter, where, searches, key);
  const anchorList = deep ? anchors.get(key) : undefined;
  if (anchorList !== undefined && anchorList.names.length > 0) {
    const k = Math.min(Math.floor(filter.offset / anchors!.every), anchorList.names.length - 1);
    const page = await listPage(db, tenantId, filter, where, narrowed, { name: anchorList.names[k]!, skip: filter.offset - k * anchors!.every });
    if (page.version === anchorList.version) return page;
    anchors!.forget(key); // the list changed since the anchors were read: walk from the start
  }
  const page = await listPage(db, tenantId, filter, where, narrowed, undefined);
  if (deep) void anchors.refresh(key, () => readAnchors(db, tenantId, where, anchors.every));
  return page;
}

/** Which list a filter selects (tenant, status, q, filter): the anchors' key. */
export function deviceListKey(tenantId: string, filter: Pick<DeviceFilter, 'status' | 'q' | 'filter'>): string {
  return `${tenantId}|${filter.status ?? ''}|${filter.q ?? ''}|${filter.filter?.text ?? ''}`;
}

/**
 * One page statement. spec §8 offset pagination: skipping N rows walks N index entries. With
 * an offset, the skip runs on names only (an index-only scan of devices_tenant_name or
 * devices_tenant_status_name, no heap visit per skipped row), then the page's rows are
 * fetched by name: offset 50k went from 45 ms to 11 ms of database time. With an anchor the
 * walk starts at the anchor's name and skips `anchor.skip` (< every) entries. The first page
 * reads its rows directly (the extra join would cost more than it saves).
 */
async function listPage(
  db: Kysely<Database>,
  tenantId: string,
  filter: DeviceFilter,
  where: RawBuilder<unknown>,
  hasQ: boolean,
  anchor: { name: string; skip: number } | undefined,
): Promise<DevicePage & { version: string | undefined }> {
  const pageRows =
    filter.offset === 0
      ? sql`SELECT name, list_json FROM devices WHERE ${where} ORDER BY name LIMIT ${filter.limit}`
      : sql`SELECT name, list_json FROM devices WHERE tenant_id = ${tenantId} AND name IN (
          SELECT name FROM devices WHERE ${where} ${anchor === undefined ? sql`` : sql`AND name >= ${anchor.name}`}
          ORDER BY name LIMIT ${filter.limit} OFFSET ${anchor === undefined ? filter.offset : anchor.skip})`;
  // Prepared without `q` on the first page and from an anchor: there a generic plan is as
  // good as a custom one. With a pattern or a long skip the planner needs the values (a
  // trigram bitmap for a rare substring, the join shape for the skip), and planning is small
  // next to that work.
  const prepare = !hasQ && (filter.offset === 0 || anchor !== undefined) ? sql.raw(PREPARE_MARK) : sql``;
  const result = await sql<ListRow>`${prepare}
    WITH page AS (${pageRows})
    SELECT
      coalesce(sum(n) FILTER (WHERE status = 'online'), 0)::bigint AS online,
      coalesce(sum(n) FILTER (WHERE status = 'offline'), 0)::bigint AS offline,
      coalesce(sum(n) FILTER (WHERE status = 'decommissioned'), 0)::bigint AS decommissioned,
      ${hasQ ? sql`(SELECT count(*) FROM devices WHERE ${where})` : sql`NULL::bigint`} AS total,
      (SELECT coalesce(string_agg(list_json, ',' ORDER BY name), '') FROM page) AS devices
      ${filter.offset === 0 ? sql`` : sql`, coalesce((SELECT version::text FROM device_list_versions WHERE tenant_id = ${tenantId}), '0') AS version`}
    FROM device_counts WHERE tenant_id = ${tenantId}`.execute(db);
  const row = result.rows[0]!;
  const counts: DeviceCounts = { online: Number(row.online), offline: Number(row.offline), decommissioned: Number(row.decommissioned) };
  const total =
    row.total !== null ? Number(row.total) : filter.status !== undefined ? counts[filter.status] : counts.online + counts.offline + counts.decommissioned;
  return { devicesJson: `[${row.devices}]`, total, counts, version: row.version };
}

/** One result row of `searchPage`: a `ListRow` with the version and the page's names. */
interface SearchRow extends ListRow {
  version: string;
  names: string[];
}

/**
 * A page of a `q` search, ONE prepared statement whatever the search: `hit` compares the list
 * version in the statement's snapshot with the remembered page's (`searches`). On a hit the
 * remembered names select the page's rows (one index lookup each) and the remembered total is
 * the answer's; on a miss the walk (on names only, as for a deep page) and the count run, and
 * the page is remembered. Whichever branch is not taken is not executed (a one-time filter and
 * a CASE over an InitPlan). The items are read in the snapshot in both cases.
 */
async function searchPage(
  db: Kysely<Database>,
  tenantId: string,
  filter: DeviceFilter,
  where: RawBuilder<unknown>,
  searches: DeviceSearchCache,
  listKey: string,
): Promise<DevicePage> {
  const key = `${listKey}|${filter.limit}|${filter.offset}`;
  const known = searches.get(key);
  // a version is never negative: -1 is a miss
  const knownVersion = known?.version ?? '-1';
  const result = await sql<SearchRow>`${sql.raw(PREPARE_MARK)}
    WITH v AS MATERIALIZED (
      SELECT coalesce((SELECT version FROM device_list_versions WHERE tenant_id = ${tenantId}), 0) AS version
    ), hit AS MATERIALIZED (
      SELECT version = ${knownVersion}::bigint AS yes FROM v
    ), names AS (
      SELECT n AS name FROM unnest(${known?.names ?? []}::text[]) AS n WHERE (SELECT yes FROM hit)
      UNION ALL
      SELECT name FROM (SELECT name FROM devices WHERE ${where} ORDER BY name LIMIT ${filter.limit} OFFSET ${filter.offset}) AS walk
        WHERE NOT (SELECT yes FROM hit)
    ), page AS (
      SELECT name, list_json FROM devices WHERE tenant_id = ${tenantId} AND name IN (SELECT name FROM names)
    )
    SELECT
      coalesce(sum(n) FILTER (WHERE status = 'online'), 0)::bigint AS online,
      coalesce(sum(n) FILTER (WHERE status = 'offline'), 0)::bigint AS offline,
      coalesce(sum(n) FILTER (WHERE status = 'decommissioned'), 0)::bigint AS decommissioned,
      CASE WHEN (SELECT yes FROM hit) THEN ${known?.total ?? 0}::bigint ELSE (SELECT count(*) FROM devices WHERE ${where}) END AS total,
      (SELECT coalesce(string_agg(list_json, ',' ORDER BY name), '') FROM page) AS devices,
      (SELECT version::text FROM v) AS version,
      (SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM page) AS names
    FROM device_counts WHERE tenant_id = ${tenantId}`.execute(db);
  const row = result.rows[0]!;
  const counts: DeviceCounts = { online: Number(row.online), offline: Number(row.offline), decommissioned: Number(row.decommissioned) };
  const total = Number(row.total);
  if (row.version !== knownVersion) searches.set(key, { version: row.version, total, names: row.names });
  return { devicesJson: `[${row.devices}]`, total, counts };
}

/**
 * A page in another order than by name: a plain offset walk on the order's index (0002 for
 * status and name; last_seen has none, so heartbeats stay HOT updates (0035): that order is
 * a top-N sort of the tenant's devices), on names only, then the page's rows
 * fetched by name, like a deep page of the default order; the counts and total come as
 * there. No anchors and no prepared statement: these orders serve people sorting a table,
 * not the fleet scripts that page through the whole list.
 */
async function sortedPage(
  db: Kysely<Database>,
  tenantId: string,
  filter: DeviceFilter,
  where: RawBuilder<unknown>,
  hasQ: boolean,
  order: RawBuilder<unknown>,
): Promise<DevicePage> {
  const result = await sql<ListRow>`
    WITH page AS (
      SELECT d.list_json, p.ord FROM (
        SELECT name, row_number() OVER (ORDER BY ${order}) AS ord FROM devices WHERE ${where}
        ORDER BY ${order} LIMIT ${filter.limit} OFFSET ${filter.offset}
      ) AS p JOIN devices d ON d.tenant_id = ${tenantId} AND d.name = p.name
    )
    SELECT
      coalesce(sum(n) FILTER (WHERE status = 'online'), 0)::bigint AS online,
      coalesce(sum(n) FILTER (WHERE status = 'offline'), 0)::bigint AS offline,
      coalesce(sum(n) FILTER (WHERE status = 'decommissioned'), 0)::bigint AS decommissioned,
      ${hasQ ? sql`(SELECT count(*) FROM devices WHERE ${where})` : sql`NULL::bigint`} AS total,
      (SELECT coalesce(string_agg(list_json, ',' ORDER BY ord), '') FROM page) AS devices
    FROM device_counts WHERE tenant_id = ${tenantId}`.execute(db);
  const row = result.rows[0]!;
  const counts: DeviceCounts = { online: Number(row.online), offline: Number(row.offline), decommissioned: Number(row.decommissioned) };
  const total =
    row.total !== null ? Number(row.total) : filter.status !== undefined ? counts[filter.status] : counts.online + counts.offline + counts.decommissioned;
  return { devicesJson: `[${row.devices}]`, total, counts };
}

/** The name at every `every`-th position of one list, and the list version, in one snapshot. */
async function readAnchors(db: Kysely<Database>, tenantId: string, where: RawBuilder<unknown>, every: number): Promise<AnchorList> {
  const { rows } = await sql<{ version: string; names: string[] }>`
    SELECT coalesce((SELECT version::text FROM device_list_versions WHERE tenant_id = ${tenantId}), '0') AS version,
      coalesce((SELECT array_agg(name ORDER BY name) FROM (
        SELECT name, row_number() OVER (ORDER BY name) - 1 AS position FROM devices WHERE ${where}
      ) AS ranked WHERE position % ${every} = 0), '{}') AS names`.execute(db);
  return rows[0]!;
}
