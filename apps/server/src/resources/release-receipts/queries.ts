import { normalizeUuid, type ActivationOutcome, type Digest } from '@svc/release-core';
import { sql, type Selectable } from 'kysely';
import type { ReleaseReceiptsTable } from '../../store/release-tables.js';
import type { Db } from '../../store/tx.js';
import type { ExportRow } from './export.js';

/**
 * The tenant device CA certificates (DER) trusted at `at`, current first: the current CA and the
 * retired ones whose trust window holds `at` (docs/device-channel.md "Device CA rotation").
 * Empty before the tenant's first enrollment.
 */
export async function tenantDeviceCaDers(db: Db, tenantId: string, at: Date): Promise<Uint8Array[]> {
  const rows = await db
    .selectFrom('device_cas')
    .select('cert_der')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb('trusted_until', 'is', null), eb('trusted_until', '>=', at)]))
    .orderBy('seq', 'desc')
    .execute();
  return rows.map((r) => new Uint8Array(r.cert_der));
}

/** Receipts with these exact envelope bytes, in any tenant (the digest is unique). */
export async function receiptsByEnvelopeDigests(db: Db, envelopeDigests: readonly Digest[]) {
  if (envelopeDigests.length === 0) return [];
  return db
    .selectFrom('release_receipts')
    .select(['id', 'tenant_id', 'device_name', 'envelope_digest'])
    .where('envelope_digest', 'in', [...envelopeDigests])
    .execute();
}

/** The signed deployment a receipt names by its transaction id; `id` must be a UUID. */
export async function signedDeploymentById(db: Db, tenantId: string, id: string): Promise<string | undefined> {
  return (
    await db.selectFrom('deployments').select('id').where('tenant_id', '=', tenantId).where('id', '=', id).where('kind', '=', 'signed').executeTakeFirst()
  )?.id;
}

/** The deployment of a signed member rollout; `rolloutId` must be a UUID. */
export async function signedDeploymentOfRollout(db: Db, tenantId: string, rolloutId: string): Promise<string | undefined> {
  return (
    await db
      .selectFrom('rollouts')
      .select('deployment_id')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', rolloutId)
      .where('kind', '=', 'signed')
      .executeTakeFirst()
  )?.deployment_id;
}

export async function deploymentRelease(db: Db, deploymentId: string): Promise<{ id: string; release_id: string; member_count: number }> {
  const d = await db.selectFrom('deployments').select(['id', 'release_id', 'member_count']).where('id', '=', deploymentId).executeTakeFirstOrThrow();
  return { id: d.id, release_id: d.release_id!, member_count: d.member_count };
}

export interface NewReceipt {
  /** Chosen by the caller, so the device row can point at the receipt in the same batch. */
  id: string;
  tenantId: string;
  deploymentId: string;
  releaseId: string;
  rolloutId: string;
  device: string;
  activation: string;
  health: string;
  payloadDigest: Digest;
  envelopeDigest: Digest;
  envelopeBytes: Uint8Array;
  payload: unknown;
  label: string;
  now: Date;
}

/** Appends receipts in one statement (spec §3 rule 7: no update or delete path); throws a unique violation on bytes already stored. */
export async function insertReceipts(db: Db, rows: readonly NewReceipt[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('release_receipts')
    .values(
      rows.map((r) => ({
        id: r.id,
        tenant_id: r.tenantId,
        deployment_id: r.deploymentId,
        release_id: r.releaseId,
        rollout_id: r.rolloutId,
        device_name: r.device,
        activation: r.activation,
        health: r.health,
        payload_digest: r.payloadDigest,
        envelope_digest: r.envelopeDigest,
        envelope_bytes: Buffer.from(r.envelopeBytes),
        payload: JSON.stringify(r.payload),
        label: r.label,
        accepted_at: r.now,
      })),
    )
    .execute();
}

const LIST_COLUMNS = [
  'id',
  'device_name',
  'rollout_id',
  'deployment_id',
  'release_id',
  'activation',
  'health',
  'payload_digest',
  'envelope_digest',
  'label',
  'accepted_at',
] as const;

export type ReceiptRow = Pick<Selectable<ReleaseReceiptsTable>, (typeof LIST_COLUMNS)[number]>;

export interface ReceiptFilter {
  device?: string | undefined;
  /** any member rollout of the receipt's deployment (UUID) */
  rolloutId?: string | undefined;
  /** the deployment (transaction) id (UUID) */
  transactionId?: string | undefined;
  activation?: string | undefined;
  label?: string | undefined;
}

function filtered(db: Db, tenantId: string, f: ReceiptFilter) {
  let q = db.selectFrom('release_receipts').where('tenant_id', '=', tenantId);
  if (f.device !== undefined) q = q.where('device_name', '=', f.device);
  if (f.transactionId !== undefined) q = q.where('deployment_id', '=', f.transactionId);
  if (f.rolloutId !== undefined) {
    const rolloutId = f.rolloutId;
    // a receipt covers its whole deployment: every member rollout finds it
    q = q.where('deployment_id', 'in', (eb) => eb.selectFrom('rollouts').select('deployment_id').where('tenant_id', '=', tenantId).where('id', '=', rolloutId));
  }
  if (f.activation !== undefined) q = q.where('activation', '=', f.activation);
  if (f.label !== undefined) q = q.where('label', '=', f.label);
  return q;
}

/** Newest first; `total` counts the filtered set. */
export async function receiptPage(db: Db, tenantId: string, f: ReceiptFilter, limit: number, offset: number): Promise<{ rows: ReceiptRow[]; total: number }> {
  const [rows, total] = await Promise.all([
    filtered(db, tenantId, f).select(LIST_COLUMNS).orderBy('accepted_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    filtered(db, tenantId, f)
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(total.n) };
}

/** The activation outcomes a receipt can carry (contracts §3, release-core `ActivationOutcome`). */
export const ACTIVATIONS = ['activated', 'rolled-back', 'failed'] as const satisfies readonly ActivationOutcome[];

/** spec §8 counts: the tenant's receipts by activation outcome (the whole set, not the filtered one). */
export async function receiptCountsByActivation(db: Db, tenantId: string): Promise<Record<ActivationOutcome, number>> {
  const rows = await db
    .selectFrom('release_receipts')
    .select(['activation', (eb) => eb.fn.countAll<string>().as('n')])
    .where('tenant_id', '=', tenantId)
    .groupBy('activation')
    .execute();
  const counts: Record<ActivationOutcome, number> = { activated: 0, 'rolled-back': 0, failed: 0 };
  for (const r of rows) counts[r.activation as ActivationOutcome] = Number(r.n);
  return counts;
}

/** One receipt with its exact envelope bytes and stored payload; `id` must be a UUID. */
export async function receiptById(db: Db, tenantId: string, id: string) {
  return db
    .selectFrom('release_receipts')
    .select([...LIST_COLUMNS, 'envelope_bytes', 'payload'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Accepted receipts oldest first, in keyset pages (the export): memory stays flat. */
export async function* iterateReceipts(
  db: Db,
  tenantId: string,
  f: { since?: Date; until?: Date; transactionId?: string },
  batch = 500,
): AsyncGenerator<ExportRow> {
  const transactionId = f.transactionId === undefined ? undefined : normalizeUuid(f.transactionId);
  // a transaction id that is not a UUID names no transaction
  if (f.transactionId !== undefined && transactionId === undefined) return;
  let after: { at: Date; id: string } | undefined;
  for (;;) {
    let q = db
      .selectFrom('release_receipts as r')
      .select([
        'r.id',
        'r.device_name',
        'r.rollout_id',
        'r.deployment_id',
        'r.release_id',
        'r.payload_digest',
        'r.envelope_digest',
        'r.accepted_at',
        'r.label',
        'r.envelope_bytes',
      ])
      .where('r.tenant_id', '=', tenantId);
    if (f.since) q = q.where('r.accepted_at', '>=', f.since);
    if (f.until) q = q.where('r.accepted_at', '<', f.until);
    if (transactionId) q = q.where('r.deployment_id', '=', transactionId);
    if (after) q = q.where(sql<boolean>`(r.accepted_at, r.id) > (${after.at}, ${after.id}::uuid)`);
    const rows = await q.orderBy('r.accepted_at').orderBy('r.id').limit(batch).execute();
    for (const r of rows) {
      yield {
        id: r.id,
        device: r.device_name,
        rollout_id: r.rollout_id,
        transaction_id: r.deployment_id,
        release_id: r.release_id,
        payload_digest: r.payload_digest,
        envelope_digest: r.envelope_digest,
        accepted_at: r.accepted_at,
        label: r.label,
        envelope_bytes: r.envelope_bytes,
      };
    }
    if (rows.length < batch) return;
    const last = rows[rows.length - 1]!;
    after = { at: last.accepted_at, id: last.id };
  }
}
