import { deviceActor, type UnitOfWorkScope } from '../resources/unit-of-work.js';
import type { DeviceChannelContext } from './context.js';

/**
 * The unit-of-work scope of a change a device makes: its tenant, as `device:<name>`, at the
 * call's clock. Every device-channel handler that changes state runs its command with
 * `runUnitOfWork(ctx.db, deviceScope(ctx, device, now), ...)`.
 */
export function deviceScope(ctx: DeviceChannelContext, device: { tenantId: string; deviceName: string }, now: Date): UnitOfWorkScope {
  return { tenant: device.tenantId, actor: deviceActor(device.deviceName), now, hooks: ctx.hooks?.unitOfWork };
}
