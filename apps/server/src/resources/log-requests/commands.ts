import { ServerError } from '../../errors/server-error.js';
import { deviceOr404 } from '../devices/commands.js';
import type { Command } from '../unit-of-work.js';
import { insertLogRequest, type LogRequestRow } from './queries.js';

/** spec §4: POST /devices/{name}/log-requests; the device is handed the request on its next heartbeat. */
export const requestLogBundle: Command<{ device: string }, LogRequestRow> = async (uow, { device: name }) => {
  const device = await deviceOr404(uow.trx, uow.tenant, name);
  if (device.status === 'decommissioned') throw new ServerError('CONFLICT', `device ${JSON.stringify(device.name)} is decommissioned`);
  const row = await insertLogRequest(uow.trx, uow.tenant, device.id, uow.actor.name);
  await uow.audit({ action: 'device.log-request', target: `device:${device.name}`, detail: { log_request: row.id } });
  return row;
};
