import type { Db } from '../../../store/tx.js';

/** One device beyond its list item: its history, the release and software it runs, its inventory and tags. */
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
