/**
 * Receipt acceptance (spec 2.3.5): verify bytes, then parse, then check against the signed
 * rollout, then append. Nothing is stored on any refusal; identical bytes again are a duplicate
 * (unique envelope digest), never a second row. Accepted receipts carry the `software-key`
 * label (spec 2.3.6): the device key is software-held, and no hardware label is ever inferred.
 */
import {
  checkReceiptAgainstRelease,
  parseCertificateDer,
  parseEnvelope,
  validateReleasePayload,
  verifyReceipt,
  RECEIPT_PAYLOAD_TYPE,
  RELEASE_PAYLOAD_TYPE,
  type ReceiptPayload,
} from '@svc/release-core';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/database.js';
import { recordAuditEvent } from '../audit/record.js';
import { isUniqueViolation } from '../store/tx.js';
import { isUuid } from '../resources/ids.js';
import { recordResult, type WaveRow } from './progression.js';
import { MAX_RELEASE_ENVELOPE_BYTES } from './releases.js';
import { writeWaves } from './rollouts.js';
import { deviceStateFromActivation, isFailure, type DeviceState, type WaveState } from './states.js';
import type { FailureThreshold } from './waves.js';
import { ServerError } from '../errors/server-error.js';

/** Receipt envelopes are small; a cap keeps an upload from costing more than a parse. */
export const MAX_RECEIPT_ENVELOPE_BYTES = 256 * 1024;
export const SOFTWARE_KEY_LABEL = 'software-key';

export interface AcceptArgs {
  deviceName: string;
  connectionCertificateDer: Uint8Array;
  envelopeBytes: Uint8Array;
  now: Date;
}

export async function acceptReceiptImpl(db: Kysely<Database>, tenantId: string, args: AcceptArgs): Promise<{ receipt_id: string; duplicate: boolean }> {
  const env = parseEnvelope(args.envelopeBytes, { maxBytes: MAX_RECEIPT_ENVELOPE_BYTES, payloadTypes: [RECEIPT_PAYLOAD_TYPE] });
  const caRow = await db.selectFrom('device_cas').select('cert_der').where('tenant_id', '=', tenantId).executeTakeFirst();
  if (!caRow) throw new ServerError('RECEIPT_UNEXPECTED', `tenant ${tenantId} has no device CA: no device can have signed this receipt`);
  // spec 2.3.5: signature by the device key, certificate chains to the tenant device CA, names
  // this device and tenant, and IS the certificate on the mTLS connection
  const v = verifyReceipt(env, {
    ca: parseCertificateDer(new Uint8Array(caRow.cert_der)),
    tenant: tenantId,
    device: args.deviceName,
    now: args.now,
    connectionCertificate: args.connectionCertificateDer,
  });
  const r: ReceiptPayload = v.payload;

  const dup = await db.selectFrom('release_receipts').select(['id', 'tenant_id', 'device_name']).where('envelope_digest', '=', v.envelopeDigest).executeTakeFirst();
  if (dup) return duplicateOf(dup, tenantId, args.deviceName);

  // find the deployment the receipt names: the transaction (multi-component) or the rollout
  const txId = r.transaction?.id;
  const rolloutId = r.rollout;
  let deploymentId: string | undefined;
  if (txId !== undefined) {
    deploymentId = isUuid(txId) ? (await db.selectFrom('deployments').select('id').where('tenant_id', '=', tenantId).where('id', '=', txId).where('kind', '=', 'signed').executeTakeFirst())?.id : undefined;
    if (!deploymentId) throw new ServerError('RECEIPT_UNEXPECTED', `transaction.id: no release transaction ${txId} in this tenant`);
  } else if (typeof rolloutId === 'string') {
    deploymentId = isUuid(rolloutId) ? (await db.selectFrom('rollouts').select('deployment_id').where('tenant_id', '=', tenantId).where('id', '=', rolloutId).where('kind', '=', 'signed').executeTakeFirst())?.deployment_id : undefined;
    if (!deploymentId) throw new ServerError('RECEIPT_UNEXPECTED', `rollout: no signed rollout ${rolloutId} in this tenant`);
  } else {
    throw new ServerError('RECEIPT_UNEXPECTED', 'rollout: the receipt names neither a rollout nor a transaction');
  }

  const dep = await db.selectFrom('deployments').select(['id', 'release_id', 'member_count']).where('id', '=', deploymentId).executeTakeFirstOrThrow();
  const rel = await db.selectFrom('releases').select(['envelope_bytes', 'payload_digest', 'envelope_digest']).where('id', '=', dep.release_id!).executeTakeFirstOrThrow();
  // the stored envelope was verified at submission and at rollout start; a receipt is evidence of
  // what happened under it, so a later key revocation does not make the receipt unacceptable
  const relEnv = parseEnvelope(rel.envelope_bytes, { maxBytes: MAX_RELEASE_ENVELOPE_BYTES, payloadTypes: [RELEASE_PAYLOAD_TYPE] });
  const release = validateReleasePayload(JSON.parse(Buffer.from(relEnv.payload, 'base64').toString('utf8')));
  const members = await db.selectFrom('rollouts').select(['id', 'component']).where('deployment_id', '=', dep.id).orderBy('position').execute();
  // spec 2.3.5: every field against the signed rollout; for a transaction the complete member set
  const expected: Parameters<typeof checkReceiptAgainstRelease>[1] = {
    release,
    payloadDigest: rel.payload_digest as never,
    envelopeDigest: rel.envelope_digest as never,
    rollouts: Object.fromEntries(members.map((m) => [m.component, m.id])),
  };
  if (dep.member_count > 1) expected.transactionId = dep.id;
  checkReceiptAgainstRelease(r, expected);

  const state = deviceStateFromActivation(r.activation);
  return db.transaction().execute(async (trx) => {
    // lock the deployment: wave counters and progression are read-modify-write
    const d = await trx.selectFrom('deployments').select(['id', 'failure_threshold']).where('id', '=', dep.id).forUpdate().executeTakeFirstOrThrow();
    const dd = await trx.selectFrom('deployment_devices').select(['wave_idx', 'state']).where('deployment_id', '=', d.id).where('device_name', '=', args.deviceName).executeTakeFirst();
    // the device must be assigned to that rollout
    if (!dd) throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} is not assigned to rollout ${members[0]?.id ?? d.id}`);
    if (dd.state !== 'pending') throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} already has a terminal receipt (${dd.state}) for this deployment`);
    let id: string;
    try {
      const row = await trx
        .insertInto('release_receipts')
        .values({
          tenant_id: tenantId,
          deployment_id: d.id,
          release_id: dep.release_id!,
          rollout_id: members[0]!.id,
          device_name: args.deviceName,
          activation: r.activation,
          health: r.health,
          payload_digest: v.payloadDigest,
          envelope_digest: v.envelopeDigest,
          envelope_bytes: Buffer.from(args.envelopeBytes),
          payload: JSON.stringify(r),
          label: SOFTWARE_KEY_LABEL,
          accepted_at: args.now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      id = row.id;
    } catch (e) {
      if (isUniqueViolation(e)) throw new ServerError('RECEIPT_UNEXPECTED', 'receipt: the same envelope was accepted concurrently; retry');
      throw e;
    }
    await recordDeviceResult(trx, d, args.deviceName, dd.wave_idx, state, id, args.now);
    // spec 6.1: the device's state change is audited with the change, in the same transaction
    await recordAuditEvent(trx, {
      tenantId, actor: `device:${args.deviceName}`, credential: 'device', action: 'release-receipt.accept', target: `release-receipt:${id}`, at: args.now,
      detail: { transaction_id: d.id, activation: r.activation, health: r.health, envelope_digest: v.envelopeDigest, label: SOFTWARE_KEY_LABEL },
    });
    return { receipt_id: id, duplicate: false };
  });
}

function duplicateOf(dup: { id: string; tenant_id: string; device_name: string }, tenantId: string, device: string): { receipt_id: string; duplicate: boolean } {
  // a verified receipt is bound to one tenant and device, so a digest match elsewhere cannot happen; refuse anyway
  if (dup.tenant_id !== tenantId || dup.device_name !== device) throw new ServerError('RECEIPT_UNEXPECTED', 'receipt: already accepted for another device');
  return { receipt_id: dup.id, duplicate: true };
}

const COUNTER: Record<Exclude<DeviceState, 'pending'>, 'n_committed' | 'n_rolled_back' | 'n_failed' | 'n_installed'> = {
  committed: 'n_committed',
  'rolled back': 'n_rolled_back',
  failed: 'n_failed',
  installed: 'n_installed',
};

/** Device state, deployment counters and wave progression, inside the caller's locked transaction. */
export async function recordDeviceResult(
  trx: Transaction<Database>,
  d: { id: string; failure_threshold: unknown },
  device: string,
  waveIdx: number,
  state: Exclude<DeviceState, 'pending'>,
  receiptId: string | null,
  now: Date,
): Promise<void> {
  await trx.updateTable('deployment_devices').set({ state, receipt_id: receiptId, updated_at: now }).where('deployment_id', '=', d.id).where('device_name', '=', device).execute();
  const col = COUNTER[state];
  await trx.updateTable('deployments').set((eb) => ({ [col]: eb(col, '+', 1) })).where('id', '=', d.id).execute();
  const waveRows = await trx.selectFrom('deployment_waves').selectAll().where('deployment_id', '=', d.id).orderBy('idx').execute();
  const before: WaveRow[] = waveRows.map((w) => ({ index: w.idx, size: w.size, requires_approval: w.requires_approval, state: w.state as WaveState, done: w.done, failed: w.failed, failures_acknowledged: w.failures_acknowledged }));
  // spec 4: the failure threshold from the constraints is evaluated as results arrive
  const after = recordResult(before, waveIdx, isFailure(state), (d.failure_threshold as FailureThreshold | null) ?? undefined);
  await writeWaves(trx, d.id, before, after, now);
}
