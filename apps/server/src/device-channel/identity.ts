import { IDENTIFIER_PATTERNS } from '@svc/release-core';
import { invalidInput } from '../errors/server-error.js';

export function spiffeId(tenantId: string, deviceName: string): string {
  return `spiffe://${tenantId}/device/${deviceName}`;
}

/** contracts §4: device names (release-core's IDENTIFIER_PATTERNS.deviceName). */
export function assertDeviceName(name: string, field: string): void {
  if (!IDENTIFIER_PATTERNS.deviceName.test(name)) {
    throw invalidInput(field, `must match ${IDENTIFIER_PATTERNS.deviceName.source}, got ${JSON.stringify(name.slice(0, 80))}`);
  }
}
