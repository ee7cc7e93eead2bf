import type { Selectable, SelectQueryBuilder } from 'kysely';
import type { Db } from '../../store/tx.js';
import { invalidInput } from '../../errors/server-error.js';
import type { AuditEventsTable } from '../../store/core-tables.js';
import type { Database } from '../../store/database.js';

export interface AuditFilters {
  since?: string | undefined;
  until?: string | undefined;
  action?: string | undefined;
}

const COLUMNS = ['id', 'seq', 'tenant_id', 'at', 'actor', 'credential', 'action', 'target', 'request_id', 'detail'] as const;
type Row = Pick<Selectable<AuditEventsTable>, (typeof COLUMNS)[number]>;

function time(field: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw invalidInput(field, 'must be an RFC 3339 time');
  return d;
}

function filtered<O>(q: SelectQueryBuilder<Database, 'audit_events', O>, tenantId: string, f: AuditFilters) {
  const since = time('since', f.since);
  const until = time('until', f.until);
  let out = q.where('tenant_id', '=', tenantId);
  if (since) out = out.where('at', '>=', since);
  if (until) out = out.where('at', '<', until);
  if (f.action) out = out.where('action', '=', f.action);
  return out;
}

/**
 * spec §8: a page of the filtered events, newest first; `counts` are events per action in the
 * since/until window (the `action` filter does not narrow them, so they list the actions a
 * client can filter by), and `total` is the filtered set's size, read from the same counts.
 */
export async function auditPage(db: Db, tenantId: string, f: AuditFilters, limit: number, offset: number) {
  const [rows, byAction] = await Promise.all([
    filtered(db.selectFrom('audit_events').select(COLUMNS), tenantId, f).orderBy('seq', 'desc').limit(limit).offset(offset).execute(),
    filtered(db.selectFrom('audit_events').select(['action', (eb) => eb.fn.countAll<string>().as('n')]), tenantId, { since: f.since, until: f.until })
      .groupBy('action')
      .orderBy('action')
      .execute(),
  ]);
  const counts: Record<string, number> = Object.fromEntries(byAction.map((r) => [r.action, Number(r.n)]));
  const total = f.action ? (counts[f.action] ?? 0) : byAction.reduce((n, r) => n + Number(r.n), 0);
  return { rows, total, counts };
}

/** Oldest first, in keyset batches: memory stays flat however long the trail is. */
export async function* iterateAuditEvents(db: Db, tenantId: string, f: AuditFilters, batch = 1000): AsyncGenerator<Row> {
  let after: string | undefined;
  for (;;) {
    let q = filtered(db.selectFrom('audit_events').select(COLUMNS), tenantId, f);
    if (after !== undefined) q = q.where('seq', '>', after);
    const rows = await q.orderBy('seq').limit(batch).execute();
    yield* rows;
    if (rows.length < batch) return;
    after = String(rows[rows.length - 1]!.seq);
  }
}

export function auditEventJson(r: Row) {
  return {
    id: r.id,
    at: new Date(r.at).toISOString(),
    actor: r.actor,
    credential: r.credential,
    tenant_id: r.tenant_id,
    action: r.action,
    target: r.target,
    request_id: r.request_id,
    detail: r.detail,
  };
}

/** The events of some targets and actions, oldest first, at most `limit` (served by the tenant/target/seq index). */
export async function auditOfTargets(db: Db, tenantId: string, targets: readonly string[], actions: readonly string[], limit: number): Promise<Row[]> {
  if (targets.length === 0 || actions.length === 0) return [];
  return await db
    .selectFrom('audit_events')
    .select(COLUMNS)
    .where('tenant_id', '=', tenantId)
    .where('target', 'in', targets)
    .where('action', 'in', actions)
    .orderBy('seq')
    .limit(limit)
    .execute();
}

/** Who wrote an audit row: the credential kind that authenticated the change. */
export type AuditCredential = 'session' | 'api-key' | 'device' | 'system' | 'anonymous';

export interface AuditRowInput {
  tenantId: string;
  /** Email, `api-key:<name>`, `device:<name>` or `system:<job>`. */
  actor: string;
  credential: AuditCredential;
  /** Dotted verb, e.g. `device.decommission`, `api-key.create`. */
  action: string;
  /** What was changed, e.g. `device:dev-1`, `user:<uuid>`. */
  target: string;
  requestId: string | null;
  detail: Record<string, unknown>;
  at: Date;
}

/**
 * spec §6 rule 1: one audit row. Called only by the unit of work (resources/unit-of-work.ts), inside
 * the transaction of the change it records; the table is append-only in the database
 * (trigger in migration 0003).
 */
export async function insertAuditRow(db: Db, row: AuditRowInput): Promise<void> {
  await insertAuditRows(db, [row]);
}

/** Appends audit rows with one multi-row statement, in the order given (their `seq` follows it). */
export async function insertAuditRows(db: Db, rows: readonly AuditRowInput[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('audit_events')
    .values(
      rows.map((row) => ({
        tenant_id: row.tenantId,
        actor: row.actor,
        credential: row.credential,
        action: row.action,
        target: row.target,
        request_id: row.requestId,
        detail: JSON.stringify(row.detail),
        at: row.at,
      })),
    )
    .execute();
}
