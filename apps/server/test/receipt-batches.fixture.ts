/**
 * Shared by the receipt batch suites: signed receipts for enrolled devices, and everything
 * acceptance writes for one deployment read back in one shape. Not a test file itself.
 */
import { envelopeBytes, parsePrivateKeyPem, sha256Digest, signReceipt, type ReceiptPayload } from '@svc/release-core';
import type { Kysely } from 'kysely';
import type { Database } from '../src/store/database.js';
import type { EnrolledDevice, PublishedRelease } from './device-channel.fixture.js';

/** A real receipt of `dev` for the published rollout, signed with its key (`over` changes fields). */
export function signedReceipt(tenantId: string, rel: PublishedRelease, dev: EnrolledDevice, over: Partial<ReceiptPayload> = {}): Buffer {
  const payload: ReceiptPayload = {
    tenant: tenantId,
    device: { name: dev.name, certificate: Buffer.from(dev.certDer).toString('base64') },
    release: { product: rel.product, version: rel.version, payload_digest: rel.payload_digest, envelope_digest: rel.envelope_digest } as never,
    rollout: rel.rolloutId,
    candidate_digest: rel.digest,
    previous_digest: null,
    resulting_digest: rel.digest,
    activation: 'activated',
    health: 'healthy',
    timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...over,
  };
  return Buffer.from(envelopeBytes(signReceipt(payload, parsePrivateKeyPem(dev.key.keyPem))));
}

export const digestOf = (bytes: Uint8Array): string => sha256Digest(bytes);

/** What acceptance wrote for one deployment: receipts, their audit rows, device states, counters, waves. */
export async function acceptanceState(db: Kysely<Database>, deploymentId: string) {
  const receipts = await db
    .selectFrom('release_receipts')
    .select(['id', 'device_name', 'envelope_digest', 'accepted_at'])
    .where('deployment_id', '=', deploymentId)
    .orderBy('device_name')
    .execute();
  const ids = receipts.map((r) => `release-receipt:${r.id}`);
  const audits =
    ids.length === 0
      ? []
      : await db.selectFrom('audit_events').select(['actor', 'target']).where('action', '=', 'release-receipt.accept').where('target', 'in', ids).execute();
  const allAudits = await db
    .selectFrom('audit_events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('action', '=', 'release-receipt.accept')
    .executeTakeFirstOrThrow();
  const devices = await db
    .selectFrom('deployment_devices')
    .select(['device_name', 'state', 'wave_idx', 'receipt_id'])
    .where('deployment_id', '=', deploymentId)
    .orderBy('device_name')
    .execute();
  const counters = await db
    .selectFrom('deployments')
    .select(['n_committed', 'n_rolled_back', 'n_failed', 'n_installed'])
    .where('id', '=', deploymentId)
    .executeTakeFirstOrThrow();
  const waves = await db
    .selectFrom('deployment_waves')
    .select(['idx', 'size', 'state', 'done', 'failed'])
    .where('deployment_id', '=', deploymentId)
    .orderBy('idx')
    .execute();
  return { receipts, audits, allAudits: Number(allAudits.n), devices, counters, waves };
}

/**
 * The invariants every batch must leave: one receipt row per terminal device and the device row
 * pointing at it, one audit row per receipt by its device, counters equal to the rows, and each
 * wave's `done` equal to its terminal devices.
 */
export function checkConsistent(s: Awaited<ReturnType<typeof acceptanceState>>): void {
  const terminal = s.devices.filter((d) => d.state !== 'pending');
  const byId = new Map(s.receipts.map((r) => [r.id, r]));
  if (terminal.length !== s.receipts.length) throw new Error(`${terminal.length} terminal devices but ${s.receipts.length} receipts`);
  for (const d of terminal) {
    const r = byId.get(d.receipt_id ?? '');
    if (r === undefined || r.device_name !== d.device_name) throw new Error(`device ${d.device_name}: its receipt_id names no receipt of it`);
  }
  const audited = new Map(s.audits.map((a) => [a.target, a.actor]));
  for (const r of s.receipts) {
    if (audited.get(`release-receipt:${r.id}`) !== `device:${r.device_name}`) throw new Error(`receipt ${r.id}: no audit row by device:${r.device_name}`);
  }
  if (s.audits.length !== s.receipts.length) throw new Error(`${s.audits.length} audit rows for ${s.receipts.length} receipts`);
  if (s.counters.n_committed + s.counters.n_rolled_back + s.counters.n_failed !== s.receipts.length)
    throw new Error(`counters ${JSON.stringify(s.counters)} for ${s.receipts.length} receipts`);
  for (const w of s.waves) {
    const done = terminal.filter((d) => d.wave_idx === w.idx).length;
    if (w.done !== done) throw new Error(`wave ${w.idx}: done ${w.done}, terminal devices ${done}`);
  }
}
