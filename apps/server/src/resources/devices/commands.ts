import { notFound, ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import { insertDeviceCertificate } from '../device-ca/queries.js';
import { consumeEnrollToken } from '../enroll-tokens/queries.js';
import { shareLockGroupsOf } from '../groups/queries.js';
import { openLogRequests } from '../log-requests/queries.js';
import { skipDecommissionedDevice } from '../rollouts/commands.js';
import type { Command } from '../unit-of-work.js';
import { addDeviceHistory, getDeviceByName, recordHeartbeat, setDecommissioned, upsertEnrolledDevice, type DeviceRecord } from './queries.js';

/** A device of the unit of work's tenant, or 404 (another tenant's device is not found either: spec §7). */
export async function deviceOr404(db: Db, tenant: string, name: string): Promise<DeviceRecord> {
  const device = await getDeviceByName(db, tenant, name);
  if (!device) throw notFound(`device ${JSON.stringify(name)}`);
  return device;
}

/**
 * DELETE /devices/{name}: decommissioned, with a history entry, and every rollout result it
 * still owes settled as `skipped` (a decommissioned device is refused on the device channel, so
 * it would never report and its waves would never complete); decommissioning twice changes
 * nothing. The groups it belongs to are share-locked first: a rollout start of one of them
 * either commits before (and its pending row is skipped here) or counts it out.
 */
export const decommissionDevice: Command<{ name: string }, void> = async (uow, { name }) => {
  const existing = await deviceOr404(uow.trx, uow.tenant, name);
  if (existing.status === 'decommissioned') return;
  await shareLockGroupsOf(uow.trx, uow.tenant, existing.name);
  const row = await setDecommissioned(uow.trx, uow.tenant, existing.name, uow.now);
  // decommissioned meanwhile by another request, which settled its rollouts
  if (row === undefined) return;
  await addDeviceHistory(uow.trx, uow.tenant, row.id, 'decommissioned', uow.now, { by: uow.actor.name });
  await uow.audit({ action: 'device.decommission', target: `device:${existing.name}` });
  await skipDecommissionedDevice(uow, existing.name);
};

/** A device certificate signed by the tenant's CA, not yet recorded. */
export interface SignedDeviceCertificate {
  fingerprint: string;
  serial: string;
  notAfter: Date;
}

export interface Enrollment {
  /** The enrollment token's secret: one use is spent here. */
  token: string;
  name: string;
  profile: string | null;
  agentVersion: string | null;
  certificate: SignedDeviceCertificate;
}

/**
 * Device channel, Enroll: the token's use, the issued certificate's log entry, the device row
 * (created, or re-enrolled with the new certificate) and the audit row commit together, so a
 * failure anywhere costs the token nothing. The certificate was signed before (the tenant's
 * CA commits on its own the first time), after a read-only check of the token.
 */
export const enrollDevice: Command<Enrollment, void> = async (uow, e) => {
  const tenantId = uow.tenant;
  const c = e.certificate;
  await insertDeviceCertificate(uow.trx, {
    tenantId,
    deviceName: e.name,
    serial: c.serial,
    fingerprint: c.fingerprint,
    notAfter: c.notAfter,
    reason: 'enroll',
    issuedAt: uow.now,
  });
  await upsertEnrolledDevice(uow.trx, {
    tenantId,
    name: e.name,
    profile: e.profile,
    agentVersion: e.agentVersion,
    certFingerprint: c.fingerprint,
    certNotAfter: c.notAfter,
    now: uow.now,
  });
  // The use is spent last: its row lock (every enrollment with this token waits on it) is
  // held only until COMMIT, not across the writes above.
  const token = await consumeEnrollToken(uow.trx, e.token, uow.now);
  // the token was read for this tenant before the certificate was signed
  if (token.tenantId !== uow.tenant) throw new ServerError('ENROLL_TOKEN_INVALID', 'enrollment token: unknown');
  // the credential was the enrollment token
  await uow.audit({
    action: 'device.enroll',
    target: `device:${e.name}`,
    detail: { enroll_token_id: token.tokenId, cert_fingerprint: c.fingerprint, not_after: c.notAfter.toISOString() },
  });
};

/**
 * Device channel, RenewCertificate: the new certificate is logged as a renewal; it becomes the
 * device's current one at its first use (`promoteRenewedCertificate`, device-channel/peer.ts),
 * so a device that lost the answer still gets in with the old one and renews again.
 */
export const renewDeviceCertificate: Command<{ name: string; certificate: SignedDeviceCertificate }, void> = async (uow, { name, certificate: c }) => {
  await insertDeviceCertificate(uow.trx, {
    tenantId: uow.tenant,
    deviceName: name,
    serial: c.serial,
    fingerprint: c.fingerprint,
    notAfter: c.notAfter,
    reason: 'renew',
    issuedAt: uow.now,
  });
  await uow.audit({
    action: 'device.certificate.renew',
    target: `device:${name}`,
    detail: { cert_fingerprint: c.fingerprint, not_after: c.notAfter.toISOString() },
  });
};

/**
 * Device channel, CheckIn: the heartbeat (online, last_seen, inventory, an `online` history
 * entry when it was not) and the hand-over of open log requests, together. A heartbeat writes
 * no audit row: it changes no setting, and the device history records the transitions.
 */
export const checkInDevice: Command<{ deviceId: string; inventory: { agentVersion?: string; profile?: string } }, { id: string; created_at: Date }[]> = async (
  uow,
  { deviceId, inventory },
) => {
  await recordHeartbeat(uow.trx, { tenantId: uow.tenant, deviceId }, inventory, uow.now);
  return openLogRequests(uow.trx, deviceId);
};
