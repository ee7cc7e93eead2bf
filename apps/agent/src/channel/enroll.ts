import type { EnrollResponse, Inventory } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, ChannelClients, enrollmentCredentials } from './client.js';
import { buildCsr } from './csr.js';
import { generateIdentityKey, type DeviceIdentityFiles } from './identity.js';
import { CheckInSchedule, retryAfterMs } from './schedule.js';

/** Refusals for load (RESOURCE_EXHAUSTED with retry-after-ms) one enrollment waits out before it fails. */
export const ENROLL_BUSY_RETRIES = 10;

export interface EnrollOptions {
  address: string;
  /** The server CA provisioned with the device (SVC_AGENT_SERVER_CA): enrollment sends a secret. */
  bootstrapCaPem: string;
  token: string;
  deviceName: string;
  inventory: Inventory;
  /** The back-off's randomness (schedule.ts); tests seed it. */
  random?: () => number;
  /** A refusal for load was waited out (logs). */
  onBusy?(waitMs: number): void;
}

/**
 * Enrollment: a P-256 key made here (it never leaves the device), a CSR with CN = device
 * name, the token over server-authenticated TLS. Returns the identity to persist; from now on
 * the agent trusts only the server CA named in the response. A server at its connection cap
 * refuses before the token is looked at (RESOURCE_EXHAUSTED with `retry-after-ms`): the
 * enrollment waits as a check-in would (schedule.ts) and tries again on a new connection, up
 * to ENROLL_BUSY_RETRIES times, instead of failing the process (whose restarts would come
 * back at once, all together).
 */
export async function enroll(o: EnrollOptions): Promise<DeviceIdentityFiles> {
  const { keyPem, keys } = await generateIdentityKey();
  const csrDer = await buildCsr(keys, o.deviceName);
  const schedule = new CheckInSchedule(o.random);
  for (let attempt = 1; ; attempt++) {
    const clients = new ChannelClients(o.address, enrollmentCredentials(o.bootstrapCaPem), { localPool: true });
    let res: EnrollResponse;
    try {
      res = await call<EnrollResponse>((md, opts, cb) =>
        clients.enrollment.enroll({ token: o.token, deviceName: o.deviceName, csrDer, inventory: o.inventory }, md, opts, cb),
      );
    } catch (err) {
      // the server closes a connection it refused: the next attempt connects again
      clients.close();
      if (retryAfterMs(err) === undefined || attempt > ENROLL_BUSY_RETRIES) throw err;
      const { waitMs } = schedule.failureMs(attempt, err);
      o.onBusy?.(waitMs);
      await sleep(waitMs);
      continue;
    }
    clients.close();
    return identityFromEnrollment(res, keyPem);
  }
}

/** The identity files an enrollment answer gives, with the key that never left the device. */
export function identityFromEnrollment(res: EnrollResponse, keyPem: string): DeviceIdentityFiles {
  return {
    tenantId: res.tenantId,
    deviceName: res.deviceName,
    keyPem,
    certPem: encodePem(res.certificateDer, 'CERTIFICATE'),
    deviceCaPem: encodePem(res.deviceCaDer, 'CERTIFICATE'),
    serverCaPem: encodePem(res.serverCaDer, 'CERTIFICATE'),
    notAfter: res.notAfter ?? new Date(0),
  };
}
