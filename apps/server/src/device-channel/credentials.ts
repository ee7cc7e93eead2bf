import { ServerCredentials } from '@grpc/grpc-js';
import { constants } from 'node:crypto';
import type { SecureContextOptions } from 'node:tls';
import { encodePem } from '@svc/release-core';
import type { ServerTls } from './server-tls.js';

/**
 * TLS for the one device port (SVC_DEVICE_ADDR). The server asks every client for a
 * certificate (`requestCert`) but lets the handshake finish without one
 * (`rejectUnauthorized: false`) because EnrollmentService.Enroll is the only call allowed
 * without one. The trust store is the device CAs of all tenants (plus the server CA as a
 * never-empty placeholder, so Node never falls back to the public roots): grpc-js only
 * exposes a peer certificate that TLS verified (`socket.authorized`), and every handler
 * then checks that it chains to the CA of the tenant it names (peer.ts).
 *
 * Tenants get CAs at runtime, so the trust store is replaceable (`setDeviceCas`), which
 * grpc-js applies to the live server with `setSecureContext`.
 *
 * No stateless session tickets (`SSL_OP_NO_TICKET`), and Node keeps no server-side session
 * cache, so no session is ever resumed: every connection is a full handshake whose client
 * certificate is verified against the trust store of the moment. Agents (grpc-js) never offer
 * a session anyway; the tickets they were sent were state and work per connection for nothing
 * (measured: about 5 KiB less server RSS per connected device at 3000 devices, 8 KiB at 10k;
 * docs/device-channel.md).
 */
/** The device port's TLS: the server leaf, every tenant's device CAs trusted, no session tickets (also the bundle port's). */
export function deviceTlsContext(tls: ServerTls, deviceCaDers: readonly Uint8Array[]): SecureContextOptions {
  return {
    cert: [Buffer.from(tls.certPem)],
    key: [Buffer.from(tls.keyPem)],
    ca: [tls.caDer, ...deviceCaDers].map((der) => encodePem(der, 'CERTIFICATE')),
    secureOptions: constants.SSL_OP_NO_TICKET,
  };
}

export class DeviceChannelCredentials extends ServerCredentials {
  readonly #tls: ServerTls;

  constructor(tls: ServerTls, deviceCaDers: readonly Uint8Array[]) {
    super({ requestCert: true, rejectUnauthorized: false }, DeviceChannelCredentials.context(tls, deviceCaDers));
    this.#tls = tls;
  }

  private static context(tls: ServerTls, deviceCaDers: readonly Uint8Array[]): SecureContextOptions {
    return deviceTlsContext(tls, deviceCaDers);
  }

  /** Replaces the trusted device CAs on the running server (new connections only). */
  setDeviceCas(deviceCaDers: readonly Uint8Array[]): void {
    this.updateSecureContextOptions(DeviceChannelCredentials.context(this.#tls, deviceCaDers));
  }

  override _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}
