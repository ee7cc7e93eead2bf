import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { principalOf } from '../auth/principal.js';
import type { Database } from '../store/database.js';

/**
 * THE audit helper: every state change writes one event through here (spec 6.1), inside
 * the same transaction as the change when there is one (pass the transaction as `db`).
 * The table is append-only in the database (trigger in migration 0003).
 */
export interface AuditEventInput {
  tenantId: string;
  /** Email, `api-key:<name>`, `device:<name>` or `system:<job>`. */
  actor: string;
  credential: 'session' | 'api-key' | 'device' | 'system' | 'anonymous';
  /** Dotted verb, e.g. `device.decommission`, `api-key.create`. */
  action: string;
  /** What was changed, e.g. `device:dev-1`, `user:<uuid>`. */
  target: string;
  requestId?: string | null;
  detail?: Record<string, unknown>;
  at?: Date;
}

export async function recordAuditEvent(db: Kysely<Database>, event: AuditEventInput): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      tenant_id: event.tenantId,
      actor: event.actor,
      credential: event.credential,
      action: event.action,
      target: event.target,
      request_id: event.requestId ?? null,
      detail: JSON.stringify(event.detail ?? {}),
      ...(event.at === undefined ? {} : { at: event.at }),
    })
    .execute();
}

/** From a route: actor, credential kind, tenant and request id come from the request. */
export async function audit(
  db: Kysely<Database>,
  request: FastifyRequest,
  event: { action: string; target: string; detail?: Record<string, unknown>; at?: Date },
): Promise<void> {
  const p = principalOf(request);
  await recordAuditEvent(db, { ...event, tenantId: p.tenantId, actor: p.actor, credential: p.kind, requestId: request.id });
}
