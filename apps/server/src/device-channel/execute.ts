import { deviceActor, runUnitOfWork, type Command } from '../resources/unit-of-work.js';
import type { DeviceChannelContext } from './context.js';

/**
 * Runs one command for a device-channel call: a unit of work in the device's tenant, as
 * `device:<name>`, at the call's clock. How a device-channel handler changes state.
 */
export function executeForDevice<I, O>(ctx: DeviceChannelContext, device: { tenantId: string; deviceName: string }, now: Date, command: Command<I, O>, input: I): Promise<O> {
  return runUnitOfWork(ctx.db, { tenant: device.tenantId, actor: deviceActor(device.deviceName), now, hooks: ctx.hooks }, (uow) => command(uow, input));
}
