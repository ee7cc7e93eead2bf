/**
 * Receipt acceptance (spec §2.3 rule 5): verify bytes, then parse, then check against the
 * signed rollout, then append. Nothing is stored on any refusal; identical bytes again are a
 * duplicate (unique envelope digest), never a second row. Accepted receipts carry the
 * `software-key` label (spec §2.3 rule 6): the device key is software-held, and no hardware
 * label is ever inferred.
 */
import {
  checkReceiptAgainstRelease,
  normalizeUuid,
  parseCertificateDer,
  parseEnvelope,
  verifyReceipt,
  LIMITS,
  RECEIPT_PAYLOAD_TYPE,
  type ReceiptPayload,
} from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import { isUniqueViolation } from '../../store/tx.js';
import { releaseEvidence } from '../releases/queries.js';
import { storedReleasePayload } from '../releases/rules.js';
import { recordDeviceResult } from '../rollouts/commands.js';
import { deploymentDevice, deploymentMembers, lockDeployment } from '../rollouts/queries.js';
import { deviceStateFromActivation } from '../rollouts/states.js';
import type { Command } from '../unit-of-work.js';
import { deploymentRelease, insertReceipt, receiptByEnvelopeDigest, signedDeploymentById, signedDeploymentOfRollout, tenantDeviceCaDer } from './queries.js';

/** spec §2.3 rule 6: the label of every accepted receipt (device keys are software-held). */
export const SOFTWARE_KEY_LABEL = 'software-key';

export interface AcceptReceiptInput {
  /** The device on the mTLS connection. */
  deviceName: string;
  /** DER of the connection's client certificate. */
  connectionCertificateDer: Uint8Array;
  envelopeBytes: Uint8Array;
}

/**
 * The device channel's `UploadReceipt`, run as `device:<name>`: the receipt row, the device's
 * state, the deployment's counters and waves, and the `release-receipt.accept` audit row are
 * one unit of work, the deployment row locked.
 */
export const acceptReceipt: Command<AcceptReceiptInput, { receipt_id: string; duplicate: boolean }> = async (uow, args) => {
  const { trx, tenant, now } = uow;
  const env = parseEnvelope(args.envelopeBytes, { maxBytes: LIMITS.receiptEnvelopeBytes, payloadTypes: [RECEIPT_PAYLOAD_TYPE] });
  const caDer = await tenantDeviceCaDer(trx, tenant);
  if (!caDer) throw new ServerError('RECEIPT_UNEXPECTED', `tenant ${tenant} has no device CA: no device can have signed this receipt`);
  // spec §2.3 rule 5: signature by the device key, certificate chains to the tenant device CA,
  // names this device and tenant, and IS the certificate on the mTLS connection
  const v = verifyReceipt(env, { ca: parseCertificateDer(caDer), tenant, device: args.deviceName, now, connectionCertificate: args.connectionCertificateDer });
  const r: ReceiptPayload = v.payload;

  const dup = await receiptByEnvelopeDigest(trx, v.envelopeDigest);
  if (dup) {
    // a verified receipt is bound to one tenant and device, so a digest match elsewhere cannot happen; refuse anyway
    if (dup.tenant_id !== tenant || dup.device_name !== args.deviceName)
      throw new ServerError('RECEIPT_UNEXPECTED', 'receipt: already accepted for another device');
    return { receipt_id: dup.id, duplicate: true };
  }

  // the deployment the receipt names: the transaction (multi-component) or the rollout
  const txId = r.transaction?.id;
  const rolloutId = r.rollout;
  let deploymentId: string | undefined;
  if (txId !== undefined) {
    const txUuid = normalizeUuid(txId);
    deploymentId = txUuid === undefined ? undefined : await signedDeploymentById(trx, tenant, txUuid);
    if (!deploymentId) throw new ServerError('RECEIPT_UNEXPECTED', `transaction.id: no release transaction ${txId} in this tenant`);
  } else if (typeof rolloutId === 'string') {
    const rolloutUuid = normalizeUuid(rolloutId);
    deploymentId = rolloutUuid === undefined ? undefined : await signedDeploymentOfRollout(trx, tenant, rolloutUuid);
    if (!deploymentId) throw new ServerError('RECEIPT_UNEXPECTED', `rollout: no signed rollout ${rolloutId} in this tenant`);
  } else {
    throw new ServerError('RECEIPT_UNEXPECTED', 'rollout: the receipt names neither a rollout nor a transaction');
  }

  const dep = await deploymentRelease(trx, deploymentId);
  const rel = await releaseEvidence(trx, dep.release_id);
  // the stored envelope was verified at submission and at rollout start; a receipt is evidence of
  // what happened under it, so a later key revocation does not make the receipt unacceptable
  const release = storedReleasePayload(rel.envelope_bytes);
  const members = await deploymentMembers(trx, dep.id);
  // spec §2.3 rule 5: every field against the signed rollout; for a transaction the complete member set
  const expected: Parameters<typeof checkReceiptAgainstRelease>[1] = {
    release,
    payloadDigest: rel.payload_digest as never,
    envelopeDigest: rel.envelope_digest as never,
    rollouts: Object.fromEntries(members.map((m) => [m.component, m.id])),
  };
  if (dep.member_count > 1) expected.transactionId = dep.id;
  checkReceiptAgainstRelease(r, expected);

  // lock the deployment: wave counters and progression are read-modify-write
  const d = await lockDeployment(trx, dep.id);
  const dd = await deploymentDevice(trx, d.id, args.deviceName);
  // the device must be assigned to that rollout
  if (!dd) throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} is not assigned to rollout ${members[0]?.id ?? d.id}`);
  if (dd.state !== 'pending')
    throw new ServerError('RECEIPT_UNEXPECTED', `device: ${args.deviceName} already has a terminal receipt (${dd.state}) for this deployment`);
  let id: string;
  try {
    id = await insertReceipt(trx, {
      tenantId: tenant,
      deploymentId: d.id,
      releaseId: dep.release_id,
      rolloutId: members[0]!.id,
      device: args.deviceName,
      activation: r.activation,
      health: r.health,
      payloadDigest: v.payloadDigest,
      envelopeDigest: v.envelopeDigest,
      envelopeBytes: args.envelopeBytes,
      payload: r,
      label: SOFTWARE_KEY_LABEL,
      now,
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('RECEIPT_UNEXPECTED', 'receipt: the same envelope was accepted concurrently; retry');
    throw e;
  }
  await recordDeviceResult(trx, d, args.deviceName, dd.wave_idx, deviceStateFromActivation(r.activation), id, now);
  // spec §6 rule 1: the device's state change is audited with the change, in the same transaction
  await uow.audit({
    action: 'release-receipt.accept',
    target: `release-receipt:${id}`,
    detail: { transaction_id: d.id, activation: r.activation, health: r.health, envelope_digest: v.envelopeDigest, label: SOFTWARE_KEY_LABEL },
  });
  return { receipt_id: id, duplicate: false };
};

/** The filters of `GET /release-receipts/export`, as sent. */
export interface ExportQuery {
  since?: string | undefined;
  until?: string | undefined;
  transaction_id?: string | undefined;
}

/** `GET /release-receipts/export` reads evidence out of the service: audited (spec §6 rule 1) before the tar streams. */
export const recordReceiptExport: Command<ExportQuery, void> = async (uow, query) => {
  await uow.audit({ action: 'release-receipts.export', target: 'release-receipts', detail: { ...query } });
};
