import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { invalidInput, notFound, ServerError } from '../../errors/server-error.js';
import type { InventoryAttributes } from './inventory.js';
import type { Db } from '../../store/tx.js';
import { insertDeviceCertificate, insertDeviceCertificates } from '../device-ca/queries.js';
import { consumeEnrollToken } from '../enroll-tokens/queries.js';
import { shareLockGroupsOf } from '../groups/queries.js';
import { openLogRequests } from '../log-requests/queries.js';
import { skipDecommissionedDevice } from '../rollouts/commands.js';
import { runAlone, type BatchCommand, type Command } from '../unit-of-work.js';
import { addDeviceHistory, getDeviceByName, setDecommissioned, upsertEnrolledDevices, type DeviceRecord } from './queries/identity.js';
import { recordHeartbeat } from './queries/presence.js';
import { lockDeviceTags, setDeviceTags } from './queries/detail.js';
import { SERVER_LIMITS } from '../../limits.js';

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
  /** The reported inventory attributes (docs/inventory.md); null keeps what a re-enrolled device had. */
  attributes?: InventoryAttributes | null;
  certificate: SignedDeviceCertificate;
}

/**
 * Device channel, Enroll: the token's use, the issued certificate's log entry, the device row
 * (created, or re-enrolled with the new certificate) and the audit row commit together, so a
 * failure anywhere costs the token nothing. The certificate was signed before (the tenant's
 * CA commits on its own the first time), after a read-only check of the token.
 */
export const enrollDevice: Command<Enrollment, void> = (uow, e) => runAlone(uow, e, enrollDevices);

/**
 * Enrollments of many units of work at once (the device channel's group commit,
 * device-channel/enroll-batch.ts), each unit its device's (`device:<name>`, its own clock): the
 * certificate log entries, the device rows and their history entries, the token uses and the
 * audit rows, each with one statement for the whole batch (one per distinct token for the
 * uses). A (tenant, device name) may appear once per batch. Any refusal (a token used up,
 * expired, or of another tenant) fails the whole batch: the caller then runs its enrollments
 * one by one, so exactly the enrollments a token still allows commit.
 */
export const enrollDevices: BatchCommand<Enrollment, void> = async ({ trx, units, audit }) => {
  await insertDeviceCertificates(
    trx,
    units.map(({ uow, input: e }) => ({
      tenantId: uow.tenant,
      deviceName: e.name,
      serial: e.certificate.serial,
      fingerprint: e.certificate.fingerprint,
      notAfter: e.certificate.notAfter,
      reason: 'enroll' as const,
      issuedAt: uow.now,
    })),
  );
  await upsertEnrolledDevices(
    trx,
    units.map(({ uow, input: e }) => ({
      tenantId: uow.tenant,
      name: e.name,
      profile: e.profile,
      agentVersion: e.agentVersion,
      attributes: e.attributes ?? null,
      certFingerprint: e.certificate.fingerprint,
      certNotAfter: e.certificate.notAfter,
      now: uow.now,
    })),
  );
  // The uses are spent last: the token's row lock (every enrollment with this token waits on
  // it) is held only until COMMIT, not across the writes above. One UPDATE per token, all of
  // its uses in this batch at once, tokens in one order (two processes' batches cannot
  // deadlock on them); the latest clock of its enrollments decides whether it expired.
  const byToken = new Map<string, { units: (typeof units)[number][]; now: Date }>();
  for (const u of units) {
    const t = byToken.get(u.input.token);
    if (t) {
      t.units.push(u);
      if (u.uow.now > t.now) t.now = u.uow.now;
    } else byToken.set(u.input.token, { units: [u], now: u.uow.now });
  }
  const tokenIds = new Map<string, string>();
  for (const secret of [...byToken.keys()].sort()) {
    const t = byToken.get(secret)!;
    const token = await consumeEnrollToken(trx, secret, t.now, t.units.length);
    // the token was read for this tenant before the certificate was signed
    if (t.units.some((u) => u.uow.tenant !== token.tenantId)) throw new ServerError('ENROLL_TOKEN_INVALID', 'enrollment token: unknown');
    tokenIds.set(secret, token.tokenId);
  }
  // the credential was the enrollment token
  await audit(
    units.map(({ uow, input: e }) => ({
      uow,
      entry: {
        action: 'device.enroll',
        target: `device:${e.name}`,
        detail: { enroll_token_id: tokenIds.get(e.token), cert_fingerprint: e.certificate.fingerprint, not_after: e.certificate.notAfter.toISOString() },
      },
    })),
  );
  return units.map(() => undefined);
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
export const checkInDevice: Command<
  { deviceId: string; inventory: { agentVersion?: string; profile?: string; attributes?: InventoryAttributes } },
  { id: string; created_at: Date }[]
> = async (uow, { deviceId, inventory }) => {
  await recordHeartbeat(uow.trx, { tenantId: uow.tenant, deviceId }, inventory, uow.now);
  return openLogRequests(uow.trx, deviceId);
};

function checkTag(tag: string): void {
  if (!IDENTIFIER_PATTERNS.deviceTag.test(tag)) throw invalidInput('tag', `must match ${IDENTIFIER_PATTERNS.deviceTag.source}`);
}

/**
 * PUT /devices/{name}/tags/{tag}: the tag is added (already there: nothing changes and nothing
 * is audited); at most `SERVER_LIMITS.devices.tagsPerDevice` tags. Answers the device's tags, sorted.
 */
export const tagDevice: Command<{ name: string; tag: string }, { tags: string[]; changed: boolean }> = async (uow, { name, tag }) => {
  checkTag(tag);
  const row = await lockDeviceTags(uow.trx, uow.tenant, name);
  if (!row) throw notFound(`device ${JSON.stringify(name)}`);
  if (row.tags.includes(tag)) return { tags: row.tags, changed: false };
  if (row.tags.length >= SERVER_LIMITS.devices.tagsPerDevice)
    throw invalidInput('tag', `device ${name} already has ${SERVER_LIMITS.devices.tagsPerDevice} tags (the most it may have)`);
  const tags = [...row.tags, tag].sort();
  await setDeviceTags(uow.trx, row.id, tags);
  await uow.audit({ action: 'device.tag.add', target: `device:${name}`, detail: { tag } });
  return { tags, changed: true };
};

/** DELETE /devices/{name}/tags/{tag}: the tag is removed (absent: nothing changes, nothing is audited). */
export const untagDevice: Command<{ name: string; tag: string }, { tags: string[]; changed: boolean }> = async (uow, { name, tag }) => {
  checkTag(tag);
  const row = await lockDeviceTags(uow.trx, uow.tenant, name);
  if (!row) throw notFound(`device ${JSON.stringify(name)}`);
  if (!row.tags.includes(tag)) return { tags: row.tags, changed: false };
  const tags = row.tags.filter((t) => t !== tag);
  await setDeviceTags(uow.trx, row.id, tags);
  await uow.audit({ action: 'device.tag.remove', target: `device:${name}`, detail: { tag } });
  return { tags, changed: true };
};
