import type { EnrollResponse, Inventory } from '@svc/device-proto';
import { encodePem } from '@svc/release-core';
import { call, ChannelClients, enrollmentCredentials } from './client.js';
import { buildCsr } from './csr.js';
import { generateIdentityKey, type DeviceIdentityFiles } from './identity.js';

export interface EnrollOptions {
  address: string;
  /** The server CA provisioned with the device (SVC_AGENT_SERVER_CA): enrollment sends a secret. */
  bootstrapCaPem: string;
  token: string;
  deviceName: string;
  inventory: Inventory;
}

/**
 * Enrollment: a P-256 key made here (it never leaves the device), a CSR with CN = device
 * name, the token over server-authenticated TLS. Returns the identity to persist; from now on
 * the agent trusts only the server CA named in the response.
 */
export async function enroll(o: EnrollOptions): Promise<DeviceIdentityFiles> {
  const { keyPem, keys } = await generateIdentityKey();
  const csrDer = await buildCsr(keys, o.deviceName);
  const clients = new ChannelClients(o.address, enrollmentCredentials(o.bootstrapCaPem));
  try {
    const res = await call<EnrollResponse>((md, opts, cb) =>
      clients.enrollment.enroll({ token: o.token, deviceName: o.deviceName, csrDer, inventory: o.inventory }, md, opts, cb),
    );
    return identityFromEnrollment(res, keyPem);
  } finally {
    clients.close();
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
