import { normalizeUuid } from '@svc/release-core';
import { notFound, ServerError } from '../../errors/server-error.js';
import { deviceOr404 } from '../devices/commands.js';
import type { Command } from '../unit-of-work.js';
import { fulfillLogRequest, insertLogRequest, type LogRequestRow } from './queries.js';

/** spec §4: POST /devices/{name}/log-requests; the device is handed the request on its next heartbeat. */
export const requestLogBundle: Command<{ device: string }, LogRequestRow> = async (uow, { device: name }) => {
  const device = await deviceOr404(uow.trx, uow.tenant, name);
  if (device.status === 'decommissioned') throw new ServerError('CONFLICT', `device ${JSON.stringify(device.name)} is decommissioned`);
  const row = await insertLogRequest(uow.trx, uow.tenant, device.id, uow.actor.name);
  await uow.audit({ action: 'device.log-request', target: `device:${device.name}`, detail: { log_request: row.id } });
  return row;
};

/** Device channel, UploadLogBundle: the device's bundle for one of its open requests (bounded by the caller). */
export const storeLogBundle: Command<{ deviceId: string; logRequestId: string; content: Uint8Array; contentType: string }, void> = async (uow, i) => {
  const id = normalizeUuid(i.logRequestId);
  const stored = id !== undefined && (await fulfillLogRequest(uow.trx, i.deviceId, id, i.content, i.contentType, uow.now));
  if (!stored) throw notFound(`log request ${i.logRequestId.slice(0, 64)}`);
  await uow.audit({
    action: 'device.log-bundle.upload',
    target: `log-request:${i.logRequestId}`,
    detail: { length: i.content.byteLength, content_type: i.contentType },
  });
};
