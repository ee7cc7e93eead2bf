/**
 * The change of a tenant's device CA set: a rotation (docs/device-channel.md "Device CA
 * rotation"). The first CA of a tenant is created on first use, outside any unit of work
 * (device-channel/device-ca.ts): it changes no state an operator made.
 */
import { sha256Digest } from '@svc/release-core';
import { ServerError } from '../../errors/server-error.js';
import type { Db } from '../../store/tx.js';
import type { Command } from '../unit-of-work.js';
import { getDeviceCa, insertNextDeviceCa, lastDeviceCertificateExpiry, retireDeviceCa, type DeviceCaRow } from './queries.js';

export interface RotatedDeviceCa {
  previous: DeviceCaRow & { retiredAt: Date; trustedUntil: Date };
  current: DeviceCaRow;
}

/**
 * Retires the tenant's current device CA `previousSeq` and makes `next` (its key already on
 * disk) the current one, audited as `device-ca.rotate`. The retired CA stays trusted for
 * verification until the last device certificate issued before now expires (at least until
 * now): every device keeps working with the certificate it has and moves to the new CA at its
 * next renewal. A concurrent rotation that committed first makes this one KEY_UNAVAILABLE.
 */
export const rotateDeviceCa: Command<
  { previousSeq: number; next: { certDer: Uint8Array; keyFile: string; store: (db: Db) => Promise<void> } },
  RotatedDeviceCa
> = async (uow, { previousSeq, next }) => {
  const current = await getDeviceCa(uow.trx, uow.tenant, 'update');
  if (current?.seq !== previousSeq) {
    throw new ServerError(
      'KEY_UNAVAILABLE',
      `KEY_UNAVAILABLE: device CA ${previousSeq} of tenant ${uow.tenant} is not the current one (${current === undefined ? 'none' : `CA ${current.seq}`}); retry`,
    );
  }
  const lastExpiry = await lastDeviceCertificateExpiry(uow.trx, uow.tenant);
  const trustedUntil = lastExpiry !== undefined && lastExpiry > uow.now ? lastExpiry : uow.now;
  if (!(await retireDeviceCa(uow.trx, uow.tenant, current.seq, uow.now, trustedUntil, uow.actor.name))) {
    throw new Error(`device CA ${current.seq} of tenant ${uow.tenant} was current under lock but not retired`);
  }
  const row = await insertNextDeviceCa(uow.trx, uow.tenant, current.seq + 1, next.certDer, next.keyFile, uow.now);
  // the new CA's wrapped key commits with its row and the audit row
  await next.store(uow.trx);
  await uow.audit({
    action: 'device-ca.rotate',
    target: `device-ca:${row.seq}`,
    detail: {
      seq: row.seq,
      fingerprint: sha256Digest(row.certDer),
      previous_seq: current.seq,
      previous_fingerprint: sha256Digest(current.certDer),
      previous_trusted_until: trustedUntil.toISOString(),
    },
  });
  return { previous: { ...current, retiredAt: uow.now, trustedUntil }, current: row };
};
