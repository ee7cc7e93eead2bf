import { notFound } from '../../errors/server-error.js';
import type { Command } from '../unit-of-work.js';
import { addDeviceHistory, getDeviceByName, setDecommissioned, type DeviceRecord } from './queries.js';

/** A device of the unit of work's tenant, or 404 (another tenant's device is not found either: spec §7). */
export async function deviceOr404(db: Parameters<typeof getDeviceByName>[0], tenant: string, name: string): Promise<DeviceRecord> {
  const device = await getDeviceByName(db, tenant, name);
  if (!device) throw notFound(`device ${JSON.stringify(name)}`);
  return device;
}

/** DELETE /devices/{name}: decommissioned, with a history entry; decommissioning twice changes nothing. */
export const decommissionDevice: Command<{ name: string }, void> = async (uow, { name }) => {
  const existing = await deviceOr404(uow.trx, uow.tenant, name);
  if (existing.status === 'decommissioned') return;
  const row = (await setDecommissioned(uow.trx, uow.tenant, existing.name, uow.now))!;
  await addDeviceHistory(uow.trx, uow.tenant, row.id, 'decommissioned', uow.now, { by: uow.actor.name });
  await uow.audit({ action: 'device.decommission', target: `device:${existing.name}` });
};
