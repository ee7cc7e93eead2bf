import { invalidInput } from '../errors/server-error.js';

/** contracts §4: device names */
export const DEVICE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export function spiffeId(tenantId: string, deviceName: string): string {
  return `spiffe://${tenantId}/device/${deviceName}`;
}

export function assertDeviceName(name: string, field: string): void {
  // contracts §4: ^[a-z0-9][a-z0-9._-]{0,62}$
  if (!DEVICE_NAME_PATTERN.test(name)) {
    throw invalidInput(field, `must match ${DEVICE_NAME_PATTERN.source}, got ${JSON.stringify(name.slice(0, 80))}`);
  }
}
