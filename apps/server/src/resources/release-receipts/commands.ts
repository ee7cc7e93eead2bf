/**
 * Receipt acceptance (spec §2.3 rule 5) in two steps. `verifyUpload` is the CPU side and runs
 * outside any transaction: bytes, then parse, then the signature, the certificate chain and the
 * connection's certificate, then every field against the signed rollout. `appendReceipts` is
 * the database side for a batch of verified receipts, in one unit of work: a few multi-row
 * statements however many receipts, the deployment row locked last and only for its counters
 * and waves. Nothing is stored for a refused receipt; identical bytes again are a duplicate
 * (unique envelope digest), never a second row. Accepted receipts carry the `software-key`
 * label (spec §2.3 rule 6): the device key is software-held, and no hardware label is ever
 * inferred.
 */
import { randomUUID } from 'node:crypto';
import { checkReceiptAgainstRelease, type ReceiptPayload, type Digest } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { isUniqueViolation } from '../../store/tx.js';
import { recordDeviceResults } from '../rollouts/commands.js';
import { claimPendingDevices, lockDeploymentDevices } from '../rollouts/queries.js';
import { deviceStateFromActivation, type DeviceState } from '../rollouts/states.js';
import { deviceActor, type Command, type UnitOfWork } from '../unit-of-work.js';
import { insertReceipts, receiptsByEnvelopeDigests, tenantDeviceCaDers, type NewReceipt } from './queries.js';
import { signedDeploymentFor, type SignedDeployment } from './signed-deployments.js';
import { verifyReceiptBytes, type ReceiptBytesInput, type VerifiedReceiptBytes } from './verify.js';

/** spec §2.3 rule 6: the label of every accepted receipt (device keys are software-held). */
export const SOFTWARE_KEY_LABEL = 'software-key';

export interface AcceptReceiptInput {
  /** The device on the mTLS connection. */
  deviceName: string;
  /** DER of the connection's client certificate. */
  connectionCertificateDer: Uint8Array;
  envelopeBytes: Uint8Array;
  /**
   * The connection's certificate was verified against the tenant device CA by this call's mTLS
   * peer authentication (device-channel/peer.ts): the embedded certificate, byte-equal to it,
   * is not verified a second time (release-core `connectionCertificateVerified`).
   */
  connectionCertificateVerified?: boolean;
}

export interface AcceptedReceipt {
  receipt_id: string;
  duplicate: boolean;
}

/** A receipt that passed every check that needs no lock: ready to append. */
export interface VerifiedUpload {
  tenant: string;
  deviceName: string;
  envelopeBytes: Uint8Array;
  payload: ReceiptPayload;
  payloadDigest: Digest;
  envelopeDigest: Digest;
  deployment: SignedDeployment;
}

/** Each receipt of a batch gets its own answer: accepted, duplicate, or its refusal. */
export type ReceiptOutcome = { ok: AcceptedReceipt } | { refused: ServerError };

/**
 * The checks of spec §2.3 rule 5 that need no transaction: run before a receipt joins a batch,
 * so a refusal here touches nothing and no other receipt. `caDers` are the tenant device CAs
 * trusted now (the current one and retired ones inside their trust window).
 */
export async function verifyUpload(
  db: Db,
  args: AcceptReceiptInput & { tenant: string; now: Date; caDers: readonly Uint8Array[] },
  verify: (input: ReceiptBytesInput) => VerifiedReceiptBytes | Promise<VerifiedReceiptBytes> = verifyReceiptBytes,
): Promise<VerifiedUpload> {
  const { tenant } = args;
  if (args.caDers.length === 0) throw new ServerError('RECEIPT_UNEXPECTED', `tenant ${tenant} has no device CA: no device can have signed this receipt`);
  const v = await verify({
    envelopeBytes: args.envelopeBytes,
    caDers: args.caDers,
    tenant,
    deviceName: args.deviceName,
    now: args.now,
    connectionCertificateDer: args.connectionCertificateDer,
    connectionCertificateVerified: args.connectionCertificateVerified === true,
  });
  const deployment = await signedDeploymentFor(db, tenant, v.payload);
  // spec §2.3 rule 5: every field against the signed rollout; for a transaction the complete member set
  checkReceiptAgainstRelease(v.payload, deployment.expected);
  return {
    tenant,
    deviceName: args.deviceName,
    envelopeBytes: args.envelopeBytes,
    payload: v.payload,
    payloadDigest: v.payloadDigest,
    envelopeDigest: v.envelopeDigest,
    deployment,
  };
}

/**
 * Appends a batch of verified receipts of this unit of work's tenant, each audited as
 * `release-receipt.accept` by its device in the same transaction. Receipts for the same device
 * of one deployment are taken in turns, in order, so a batch ends exactly where one-by-one
 * acceptance would: identical bytes are one row and duplicates, a second receipt for a device
 * that is already terminal is refused.
 */
export const appendReceipts: Command<readonly VerifiedUpload[], ReceiptOutcome[]> = async (uow, items) => {
  // a batch is one tenant's: its rows and audit rows are written under `uow.tenant`
  const stranger = items.find((v) => v.tenant !== uow.tenant);
  if (stranger !== undefined) throw new Error(`appendReceipts: a receipt of tenant ${stranger.tenant} in a batch of tenant ${uow.tenant}`);
  const outcomes: (ReceiptOutcome | undefined)[] = new Array<ReceiptOutcome | undefined>(items.length);
  let left = items.map((v, i) => ({ v, i }));
  while (left.length > 0) {
    const turn: typeof left = [];
    const later: typeof left = [];
    const seen = new Set<string>();
    for (const x of left) {
      const key = `${x.v.deployment.id} ${x.v.deviceName}`;
      (seen.has(key) ? later : turn).push(x);
      seen.add(key);
    }
    const got = await appendTurn(
      uow,
      turn.map((x) => x.v),
    );
    turn.forEach((x, k) => (outcomes[x.i] = got[k]));
    left = later;
  }
  return outcomes as ReceiptOutcome[];
};

const refused = (msg: string): ReceiptOutcome => ({ refused: new ServerError('RECEIPT_UNEXPECTED', msg) });

/**
 * One turn: at most one receipt per device and deployment. The device rows are locked first (in
 * name order), then the stored receipts are read: a receipt another process committed while
 * this one waited for a lock is seen, and its bytes again are a duplicate.
 */
async function appendTurn(uow: UnitOfWork, items: readonly VerifiedUpload[]): Promise<ReceiptOutcome[]> {
  const { trx, tenant, now } = uow;
  const outcomes: (ReceiptOutcome | undefined)[] = new Array<ReceiptOutcome | undefined>(items.length);
  const byDeployment = new Map<string, number[]>();
  items.forEach((v, k) => byDeployment.set(v.deployment.id, [...(byDeployment.get(v.deployment.id) ?? []), k]));
  const deploymentIds = [...byDeployment.keys()].sort();
  const devices = new Map<string, Map<string, { wave_idx: number; state: DeviceState }>>();
  for (const id of deploymentIds) {
    devices.set(
      id,
      await lockDeploymentDevices(
        trx,
        id,
        byDeployment.get(id)!.map((k) => items[k]!.deviceName),
      ),
    );
  }
  const stored = new Map(
    (
      await receiptsByEnvelopeDigests(
        trx,
        items.map((v) => v.envelopeDigest),
      )
    ).map((r) => [r.envelope_digest, r]),
  );

  const receipts: NewReceipt[] = [];
  const results = new Map<string, { waveIdx: number; state: Exclude<DeviceState, 'pending'> }[]>();
  for (const deploymentId of deploymentIds) {
    const claims: { k: number; id: string; state: Exclude<DeviceState, 'pending'> }[] = [];
    for (const k of byDeployment.get(deploymentId)!) {
      const v = items[k]!;
      const dup = stored.get(v.envelopeDigest);
      const dd = devices.get(deploymentId)!.get(v.deviceName);
      // a verified receipt is bound to one tenant and device, so a digest match elsewhere cannot happen; refuse anyway
      if (dup !== undefined && (dup.tenant_id !== tenant || dup.device_name !== v.deviceName))
        outcomes[k] = refused('receipt: already accepted for another device');
      else if (dup !== undefined) outcomes[k] = { ok: { receipt_id: dup.id, duplicate: true } };
      // the device must be assigned to that rollout
      else if (dd === undefined) outcomes[k] = refused(`device: ${v.deviceName} is not assigned to rollout ${v.deployment.leadRolloutId}`);
      // decommissioned while it owed this receipt: settled without one, and back in service it owes none
      else if (dd.state === 'skipped') outcomes[k] = refused(`device: ${v.deviceName} was decommissioned while it was pending in this deployment (skipped)`);
      else if (dd.state !== 'pending') outcomes[k] = refused(`device: ${v.deviceName} already has a terminal receipt (${dd.state}) for this deployment`);
      else claims.push({ k, id: randomUUID(), state: deviceStateFromActivation(v.payload.activation) });
    }
    const claimed = await claimPendingDevices(
      trx,
      deploymentId,
      claims.map((c) => ({ device: items[c.k]!.deviceName, state: c.state, receiptId: c.id })),
      now,
    );
    const done: { waveIdx: number; state: Exclude<DeviceState, 'pending'> }[] = [];
    for (const c of claims) {
      const v = items[c.k]!;
      const waveIdx = claimed.get(v.deviceName);
      // the row is locked and was pending: only a broken invariant lands here
      if (waveIdx === undefined) throw new Error(`receipt: device ${v.deviceName} was pending under lock but not moved`);
      done.push({ waveIdx, state: c.state });
      receipts.push({
        id: c.id,
        tenantId: tenant,
        deploymentId,
        releaseId: v.deployment.releaseId,
        rolloutId: v.deployment.leadRolloutId,
        device: v.deviceName,
        activation: v.payload.activation,
        health: v.payload.health,
        payloadDigest: v.payloadDigest,
        envelopeDigest: v.envelopeDigest,
        envelopeBytes: v.envelopeBytes,
        payload: v.payload,
        label: SOFTWARE_KEY_LABEL,
        now,
      });
      outcomes[c.k] = { ok: { receipt_id: c.id, duplicate: false } };
    }
    results.set(deploymentId, done);
  }

  try {
    await insertReceipts(trx, receipts);
  } catch (e) {
    if (isUniqueViolation(e)) throw new ServerError('RECEIPT_UNEXPECTED', 'receipt: the same envelope was accepted concurrently; retry');
    throw e;
  }
  // spec §6 rule 1: each device's state change is audited with the change, in the same transaction
  await uow.auditMany(
    receipts.map((r) => ({
      action: 'release-receipt.accept',
      target: `release-receipt:${r.id}`,
      actor: deviceActor(r.device),
      detail: { transaction_id: r.deploymentId, activation: r.activation, health: r.health, envelope_digest: r.envelopeDigest, label: SOFTWARE_KEY_LABEL },
    })),
  );
  // counters and waves last: the deployment rows are locked from here to COMMIT, in one order
  for (const deploymentId of deploymentIds) await recordDeviceResults(uow, deploymentId, results.get(deploymentId)!);
  return outcomes as ReceiptOutcome[];
}

/**
 * One receipt in the caller's unit of work (as `device:<name>`): `verifyUpload`, then a batch
 * of one. The device channel batches through `ReceiptPipeline` (receipt-pipeline.ts) instead.
 */
export const acceptReceipt: Command<AcceptReceiptInput, AcceptedReceipt> = async (uow, args) => {
  const caDers = await tenantDeviceCaDers(uow.trx, uow.tenant, uow.now);
  const v = await verifyUpload(uow.trx, { ...args, tenant: uow.tenant, now: uow.now, caDers });
  const [out] = await appendReceipts(uow, [v]);
  if (out === undefined || 'refused' in out) throw out?.refused ?? new Error('appendReceipts: no outcome');
  return out.ok;
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
