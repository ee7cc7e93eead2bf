import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { likeContains } from '../../http/pagination.js';
import type { DevicesTable } from '../../store/core-tables.js';
import type { Database } from '../../store/database.js';
import type { AnchorList, DeviceListAnchors } from './anchors.js';
import { PREPARE_MARK } from '../../store/prepared.js';
import type { Db } from '../../store/tx.js';
import type { InventoryAttributes } from './inventory.js';

/**
 * The devices' SQL. The device channel's commands call `upsertEnrolledDevices` on enrollment,
 * `recordHeartbeat` on a check-in that changes the device (status, inventory), its
 * `last_seen` buffer `advanceLastSeen` and `markDevicesOnline` for all others; a check-in reads
 * `deviceHeartbeatState` to tell which. Its authentication reads `deviceCredentialRow` (when
 * its cache cannot answer) and `promoteRenewedCertificate`; the REST routes list, count and decommission;
 * the offline detector runs `markStaleDevicesOffline`, the one query over every tenant.
 */
export const DEVICE_STATUSES = ['online', 'offline', 'decommissioned'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

export type DeviceRecord = Pick<Selectable<DevicesTable>, (typeof COLUMNS)[number]>;

const COLUMNS = [
  'id',
  'tenant_id',
  'name',
  'status',
  'profile',
  'agent_version',
  'last_seen',
  'cert_fingerprint',
  'cert_not_after',
  'created_at',
  'updated_at',
] as const;

export async function getDeviceByName(db: Db, tenantId: string, name: string): Promise<DeviceRecord | undefined> {
  return db.selectFrom('devices').select(COLUMNS).where('tenant_id', '=', tenantId).where('name', '=', name).executeTakeFirst();
}

export async function addDeviceHistory(
  db: Db,
  tenantId: string,
  deviceId: string,
  event: string,
  at: Date,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await db
    .insertInto('device_history')
    .values({ tenant_id: tenantId, device_id: deviceId, event, at, detail: JSON.stringify(detail) })
    .execute();
}

/** One device's enrollment, as `upsertEnrolledDevices` writes it. */
export interface EnrolledDeviceInput {
  tenantId: string;
  name: string;
  profile?: string | null;
  agentVersion?: string | null;
  /** The reported attributes (docs/inventory.md); null keeps what the device had. */
  attributes?: InventoryAttributes | null;
  certFingerprint: string;
  certNotAfter: Date | null;
  now: Date;
}

/**
 * Enrollment: creates the device (online) or re-enrolls it with its new certificate, with an
 * `enrolled` history entry. A decommissioned device that enrolls again becomes online again
 * (a fresh token was used). One statement (`upsertEnrolledDevices`).
 */
export async function upsertEnrolledDevice(db: Db, input: EnrolledDeviceInput): Promise<DeviceRecord> {
  const [row] = await upsertEnrolledDevices(db, [input]);
  return row!;
}

/**
 * `upsertEnrolledDevice` for many devices with one statement (the devices, and their history
 * entries from what the upsert returned), so the counts and list-version triggers fire once
 * for all of them. The rows are written in (tenant, name) order, the order every batch locks
 * them in; a (tenant, name) may appear only once (PostgreSQL refuses to update one row twice
 * in a statement). Returns the rows in the order given.
 */
export async function upsertEnrolledDevices(db: Db, inputs: readonly EnrolledDeviceInput[]): Promise<DeviceRecord[]> {
  for (const input of inputs) {
    if (!IDENTIFIER_PATTERNS.deviceName.test(input.name)) throw new Error(`device name: must match ${IDENTIFIER_PATTERNS.deviceName.source}`);
  }
  const keyOf = (tenantId: string, name: string) => `${tenantId}/${name}`;
  const ordered = [...inputs].sort((a, b) => (a.tenantId === b.tenantId ? cmp(a.name, b.name) : cmp(a.tenantId, b.tenantId)));
  const rows = await db
    .with('enrolled', (qb) =>
      qb
        .insertInto('devices')
        .values(
          ordered.map((input) => ({
            tenant_id: input.tenantId,
            name: input.name,
            status: 'online',
            profile: input.profile ?? null,
            agent_version: input.agentVersion ?? null,
            inventory: input.attributes ? JSON.stringify(input.attributes) : '{}',
            last_seen: input.now,
            cert_fingerprint: input.certFingerprint,
            cert_not_after: input.certNotAfter,
            updated_at: input.now,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['tenant_id', 'name']).doUpdateSet((eb) => ({
            status: 'online',
            profile: eb.fn.coalesce(eb.ref('excluded.profile'), eb.ref('devices.profile')),
            agent_version: eb.fn.coalesce(eb.ref('excluded.agent_version'), eb.ref('devices.agent_version')),
            // an enrollment that reports no attributes keeps the ones the device had
            inventory: sql<string>`CASE WHEN excluded.inventory = '{}'::jsonb THEN devices.inventory ELSE excluded.inventory END`,
            last_seen: eb.ref('excluded.last_seen'),
            cert_fingerprint: eb.ref('excluded.cert_fingerprint'),
            cert_not_after: eb.ref('excluded.cert_not_after'),
            updated_at: eb.ref('excluded.updated_at'),
          })),
        )
        .returning(COLUMNS),
    )
    // the history entry at the enrollment's time (updated_at), naming its certificate
    .with('history', (qb) =>
      qb
        .insertInto('device_history')
        .columns(['tenant_id', 'device_id', 'event', 'at', 'detail'])
        .expression((eb) =>
          eb
            .selectFrom('enrolled')
            .select([
              'enrolled.tenant_id',
              'enrolled.id',
              sql.lit('enrolled').as('event'),
              'enrolled.updated_at',
              sql<string>`jsonb_build_object('cert_fingerprint', enrolled.cert_fingerprint)`.as('detail'),
            ]),
        ),
    )
    .selectFrom('enrolled')
    .select(COLUMNS)
    .execute();
  const byKey = new Map(rows.map((r) => [keyOf(r.tenant_id, r.name), r]));
  return inputs.map((input) => {
    const row = byKey.get(keyOf(input.tenantId, input.name));
    if (!row) throw new Error(`device ${input.name}: not written`);
    return row;
  });
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What the device channel's authentication reads of a device when its cache cannot answer (one indexed row). */
export async function deviceCredentialRow(
  db: Db,
  tenantId: string,
  name: string,
): Promise<{ id: string; status: string; cert_fingerprint: string | null } | undefined> {
  return db.selectFrom('devices').select(['id', 'status', 'cert_fingerprint']).where('tenant_id', '=', tenantId).where('name', '=', name).executeTakeFirst();
}

/**
 * What a check-in compares with what the device sends (one indexed row by primary key): the
 * status (an offline device comes back online with a history entry) and the stored inventory
 * (a check-in writes at once only when it changed).
 */
export async function deviceHeartbeatState(
  db: Db,
  deviceId: string,
): Promise<{ status: string; profile: string | null; agent_version: string | null } | undefined> {
  return db.selectFrom('devices').select(['status', 'profile', 'agent_version']).where('id', '=', deviceId).executeTakeFirst();
}

/**
 * Heartbeats of offline devices, many at once: each comes back `online` with an `online` history
 * entry at its time (the counts and list-version triggers fire once for the statement). Devices
 * no longer offline (online meanwhile, decommissioned) are left alone. Id order, like
 * `advanceLastSeen`. Returns the devices it flipped.
 */
export async function markDevicesOnline(db: Db, seen: readonly { id: string; at: Date }[]): Promise<number> {
  if (seen.length === 0) return 0;
  const sorted = [...seen].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = sorted.map((s) => s.id);
  const ats = sorted.map((s) => s.at.toISOString());
  const r = await sql<{ id: string; tenant_id: string; at: Date }>`
    UPDATE devices d SET status = 'online', updated_at = v.at
    FROM (
      SELECT x.id, x.at FROM devices
      JOIN unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS x(id, at) ON devices.id = x.id
      WHERE devices.status = 'offline'
      ORDER BY x.id
      FOR UPDATE OF devices
    ) AS v
    WHERE d.id = v.id
    RETURNING d.id, d.tenant_id, v.at`.execute(db);
  if (r.rows.length > 0) {
    await db
      .insertInto('device_history')
      .values(r.rows.map((row) => ({ tenant_id: row.tenant_id, device_id: row.id, event: 'online', at: row.at, detail: '{}' })))
      .execute();
  }
  return r.rows.length;
}

/**
 * Many heartbeats in one statement: each device's `last_seen` advances to its time (never
 * back: a later check-in may have been written by another path or process meanwhile).
 * Nothing else changes, so the counts and list-version triggers net to nothing, and the
 * row version is a HOT update (migration 0035). Decommissioned devices are left alone.
 * Rows are taken in id order, so two processes flushing overlapping sets cannot deadlock.
 */
export async function advanceLastSeen(db: Db, seen: readonly { id: string; at: Date }[]): Promise<number> {
  if (seen.length === 0) return 0;
  const sorted = [...seen].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const ids = sorted.map((s) => s.id);
  const ats = sorted.map((s) => s.at.toISOString());
  const r = await sql`
    UPDATE devices d SET last_seen = v.at
    FROM (
      SELECT x.id, x.at FROM devices
      JOIN unnest(${ids}::uuid[], ${ats}::timestamptz[]) AS x(id, at) ON devices.id = x.id
      WHERE devices.status <> 'decommissioned' AND (devices.last_seen IS NULL OR devices.last_seen < x.at)
      ORDER BY x.id
      FOR UPDATE OF devices
    ) AS v
    WHERE d.id = v.id`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * The heartbeat write of a check-in: ONE statement that also returns the status before it (the
 * device channel's authentication is usually answered from its cache and reads no row).
 * Same effect as `markDeviceSeen`: online, `last_seen`, inventory, and an `online` history entry
 * when the device was not online before. A decommissioned device is left alone (the WHERE clause).
 */
export async function recordHeartbeat(
  db: Db,
  peer: { tenantId: string; deviceId: string },
  inventory: { agentVersion?: string; profile?: string; attributes?: InventoryAttributes },
  now: Date,
): Promise<void> {
  const row = await db
    .updateTable('devices')
    // the row as it was, locked first so no other heartbeat's change slips in between
    .from(db.selectFrom('devices').select(['id', 'status']).where('id', '=', peer.deviceId).forUpdate().as('before'))
    .set({
      last_seen: now,
      status: 'online',
      updated_at: now,
      ...(inventory.agentVersion === undefined ? {} : { agent_version: inventory.agentVersion }),
      ...(inventory.profile === undefined ? {} : { profile: inventory.profile }),
      ...(inventory.attributes === undefined ? {} : { inventory: JSON.stringify(inventory.attributes) }),
    })
    .whereRef('devices.id', '=', 'before.id')
    .where('devices.status', '!=', 'decommissioned')
    .returning(['devices.id', 'before.status as was'])
    .executeTakeFirst();
  if (row !== undefined && row.was !== 'online') await addDeviceHistory(db, peer.tenantId, peer.deviceId, 'online', now);
}

/**
 * A renewed certificate becomes the device's current one at its first use (device-channel/peer.ts):
 * until then the previous one keeps working, so a device that lost the renewal answer (crash,
 * cut connection) still gets in and renews again. Only the newest certificate issued to the
 * device qualifies, and only when it was a renewal: re-enrollment issues a newer one, and a
 * second renewal supersedes the first. Compare-and-set on the fingerprint the caller read.
 * Returns false when the certificate does not qualify.
 */
export async function promoteRenewedCertificate(
  db: Db,
  a: { tenantId: string; deviceName: string; deviceId: string; currentFingerprint: string | null; fingerprint: string; now: Date },
): Promise<boolean> {
  const newest = await db
    .selectFrom('device_certificates')
    .select(['fingerprint', 'reason', 'not_after'])
    .where('tenant_id', '=', a.tenantId)
    .where('device_name', '=', a.deviceName)
    .orderBy('issued_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (newest === undefined || newest.fingerprint !== a.fingerprint || newest.reason !== 'renew') return false;
  const row = await db
    .updateTable('devices')
    .set({ cert_fingerprint: a.fingerprint, cert_not_after: new Date(newest.not_after), updated_at: a.now })
    .where('id', '=', a.deviceId)
    .where((eb) => (a.currentFingerprint === null ? eb('cert_fingerprint', 'is', null) : eb('cert_fingerprint', '=', a.currentFingerprint)))
    .returning(['id'])
    .executeTakeFirst();
  return row !== undefined;
}

/** Heartbeat: last_seen, online (never resurrects a decommissioned device). */
export async function markDeviceSeen(
  db: Kysely<Database>,
  tenantId: string,
  name: string,
  input: { now: Date; agentVersion?: string; profile?: string },
): Promise<DeviceRecord | undefined> {
  const before = await getDeviceByName(db, tenantId, name);
  if (!before || before.status === 'decommissioned') return before;
  const row = await db
    .updateTable('devices')
    .set({
      last_seen: input.now,
      status: 'online',
      updated_at: input.now,
      ...(input.agentVersion === undefined ? {} : { agent_version: input.agentVersion }),
      ...(input.profile === undefined ? {} : { profile: input.profile }),
    })
    .where('id', '=', before.id)
    .where('status', '!=', 'decommissioned')
    .returning(COLUMNS)
    .executeTakeFirst();
  if (row && before.status !== 'online') await addDeviceHistory(db, tenantId, row.id, 'online', input.now);
  return row;
}

export async function markDeviceOffline(db: Kysely<Database>, tenantId: string, name: string, now: Date): Promise<void> {
  const row = await db
    .updateTable('devices')
    .set({ status: 'offline', updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .where('status', '=', 'online')
    .returning(['id'])
    .executeTakeFirst();
  if (row) await addDeviceHistory(db, tenantId, row.id, 'offline', now);
}

/** Offline detector (all tenants): online devices not seen since `before`. */
export async function markStaleDevicesOffline(db: Db, before: Date): Promise<number> {
  const rows = await db
    .updateTable('devices')
    .set({ status: 'offline', updated_at: before })
    .where('status', '=', 'online')
    .where('last_seen', '<', before)
    .returning(['id'])
    .execute();
  return rows.length;
}

/** Sets a device's status to decommissioned; undefined when it does not exist or already is. Counts follow by trigger. */
export async function setDecommissioned(db: Db, tenantId: string, name: string, now: Date): Promise<DeviceRecord | undefined> {
  return db
    .updateTable('devices')
    .set({ status: 'decommissioned', updated_at: now })
    .where('tenant_id', '=', tenantId)
    .where('name', '=', name)
    .where('status', '<>', 'decommissioned')
    .returning(COLUMNS)
    .executeTakeFirst();
}

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
 *   the anchors' version; otherwise it walks from the start and anchors are rebuilt.
 */
export async function listDevices(db: Kysely<Database>, tenantId: string, filter: DeviceFilter, anchors?: DeviceListAnchors): Promise<DevicePage> {
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

/** spec §8: a page of the device's history, newest first; `counts` by event and `total` over the device's whole history. */
export async function deviceHistory(db: Db, deviceId: string, limit: number, offset: number) {
  const [rows, byEvent] = await Promise.all([
    db
      .selectFrom('device_history')
      .select(['id', 'at', 'event', 'detail'])
      .where('device_id', '=', deviceId)
      .orderBy('at', 'desc')
      .orderBy('id')
      .limit(limit)
      .offset(offset)
      .execute(),
    db
      .selectFrom('device_history')
      .select(['event', (eb) => eb.fn.countAll<string>().as('n')])
      .where('device_id', '=', deviceId)
      .groupBy('event')
      .orderBy('event')
      .execute(),
  ]);
  const counts: Record<string, number> = Object.fromEntries(byEvent.map((r) => [r.event, Number(r.n)]));
  return { rows, total: byEvent.reduce((n, r) => n + Number(r.n), 0), counts };
}

/** What a device runs: its newest activated receipt's release and members (device-signed). */
export interface DeviceCurrentRelease {
  release_id: string;
  product: string;
  version: string;
  transaction_id: string;
  receipt_id: string;
  label: string;
  accepted_at: Date;
  /** each member's component and the digest the receipt says now runs (`resulting_digest`) */
  members: { component: string; digest: string }[];
}

/**
 * The device's current release: the release of its newest receipt whose activation is
 * `activated` (a rolled-back or failed attempt leaves the one before in place), with the
 * members' resulting digests from the signed payload (contracts §3: `members`, or the one
 * `resulting_digest` and its rollout's component).
 */
export async function deviceCurrentRelease(db: Db, tenantId: string, name: string): Promise<DeviceCurrentRelease | null> {
  const row = await db
    .selectFrom('release_receipts as r')
    .innerJoin('releases as rel', 'rel.id', 'r.release_id')
    .leftJoin('rollouts as ro', 'ro.id', 'r.rollout_id')
    .select(['r.id', 'r.release_id', 'r.deployment_id', 'r.label', 'r.accepted_at', 'r.payload', 'rel.product', 'rel.version', 'ro.component'])
    .where('r.tenant_id', '=', tenantId)
    .where('r.device_name', '=', name)
    .where('r.activation', '=', 'activated')
    .orderBy('r.accepted_at', 'desc')
    .orderBy('r.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (row === undefined) return null;
  const payload = (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as {
    members?: { component?: unknown; resulting_digest?: unknown }[];
    resulting_digest?: unknown;
  };
  const members = Array.isArray(payload.members)
    ? payload.members.flatMap((m) =>
        typeof m.component === 'string' && typeof m.resulting_digest === 'string' ? [{ component: m.component, digest: m.resulting_digest }] : [],
      )
    : typeof payload.resulting_digest === 'string' && row.component !== null
      ? [{ component: row.component, digest: payload.resulting_digest }]
      : [];
  return {
    release_id: row.release_id,
    product: row.product,
    version: row.version,
    transaction_id: row.deployment_id,
    receipt_id: row.id,
    label: row.label,
    accepted_at: row.accepted_at,
    members,
  };
}

/**
 * Per component, the digest the device last reported running and where that comes from:
 * `receipt` (device-signed) or `legacy` (a legacy rollout's status report, device-reported only).
 */
export async function deviceSoftware(db: Db, tenantId: string, name: string) {
  return db
    .selectFrom('vuln_device_software')
    .select(['component', 'digest', 'source', 'observed_at'])
    .where('tenant_id', '=', tenantId)
    .where('device_name', '=', name)
    .orderBy('component')
    .execute();
}

/** A device's reported inventory and its tags (GET /devices/{name}). */
export async function deviceInventory(db: Db, deviceId: string): Promise<{ inventory: unknown; tags: string[] } | undefined> {
  return db.selectFrom('devices').select(['inventory', 'tags']).where('id', '=', deviceId).executeTakeFirst();
}

/** The device's tags, its row locked (a tag change reads, decides, writes). */
export async function lockDeviceTags(db: Db, tenantId: string, name: string): Promise<{ id: string; tags: string[] } | undefined> {
  return db.selectFrom('devices').select(['id', 'tags']).where('tenant_id', '=', tenantId).where('name', '=', name).forUpdate().executeTakeFirst();
}

/** Replaces the device's tags (kept sorted by the caller). */
export async function setDeviceTags(db: Db, deviceId: string, tags: string[]): Promise<void> {
  await db.updateTable('devices').set({ tags }).where('id', '=', deviceId).execute();
}
