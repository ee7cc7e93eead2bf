import { ServerCredentials } from '@grpc/grpc-js';
import type { ServerTls } from './server-tls.js';

/**
 * TLS for the one device port (SVC_DEVICE_ADDR). The server asks every client for a
 * certificate (`requestCert`) but lets the handshake finish without one
 * (`rejectUnauthorized: false`): EnrollmentService.Enroll is the only call allowed without
 * a certificate, and every other handler authenticates the peer certificate itself against
 * the tenant's device CA (peer.ts). Doing the chain check in the application is what makes
 * per-tenant CAs that appear at runtime possible without reloading TLS contexts. The TLS
 * handshake still proves the client holds the private key of the certificate it presents.
 */
class DeviceChannelCredentials extends ServerCredentials {
  constructor(tls: ServerTls) {
    super(
      { requestCert: true, rejectUnauthorized: false },
      { cert: [Buffer.from(tls.certPem)], key: [Buffer.from(tls.keyPem)] },
    );
  }

  override _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

export function deviceChannelCredentials(tls: ServerTls): ServerCredentials {
  return new DeviceChannelCredentials(tls);
}
