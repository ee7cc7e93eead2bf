import { credentials, Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { DeviceServiceClient, EnrollmentServiceClient, RepositoryServiceClient } from '@svc/device-proto';
import type { DeviceIdentityFiles } from './identity.js';

/**
 * The DNS name in every server certificate of the device port. The agent checks the server
 * against the CA it pinned at enrollment and this name, whatever address it dials.
 */
export const DEVICE_CHANNEL_TLS_NAME = 'device-channel.svc.internal';

const CHANNEL_OPTIONS = {
  'grpc.ssl_target_name_override': DEVICE_CHANNEL_TLS_NAME,
  'grpc.default_authority': DEVICE_CHANNEL_TLS_NAME,
  // an idle agent (persistent mode) keeps its connection but sends nothing; reconnects are cheap
  'grpc.keepalive_time_ms': 120_000,
  'grpc.keepalive_permit_without_calls': 0,
};

/** Server-TLS-only credentials for enrollment: `bootstrapCaPem` is the server CA shipped with the device. */
export function enrollmentCredentials(bootstrapCaPem: string): ChannelCredentials {
  return credentials.createSsl(Buffer.from(bootstrapCaPem));
}

/** mTLS: the device key and certificate, trusting only the pinned server CA. */
export function deviceCredentials(id: Pick<DeviceIdentityFiles, 'keyPem' | 'certPem' | 'serverCaPem'>): ChannelCredentials {
  return credentials.createSsl(Buffer.from(id.serverCaPem), Buffer.from(id.keyPem), Buffer.from(id.certPem));
}

/** The three service clients over ONE HTTP/2 connection (grpc-js shares the channel by options). */
export class ChannelClients {
  readonly enrollment: EnrollmentServiceClient;
  readonly device: DeviceServiceClient;
  readonly repository: RepositoryServiceClient;

  /** `localPool`: a subchannel pool of its own, so `close` ends the TCP connection at once (connection.ts). */
  constructor(address: string, creds: ChannelCredentials, o: { localPool?: boolean } = {}) {
    const options = o.localPool ? { ...CHANNEL_OPTIONS, 'grpc.use_local_subchannel_pool': 1 } : CHANNEL_OPTIONS;
    this.device = new DeviceServiceClient(address, creds, options);
    const channelOverride = this.device.getChannel();
    this.enrollment = new EnrollmentServiceClient(address, creds, { ...options, channelOverride });
    this.repository = new RepositoryServiceClient(address, creds, { ...options, channelOverride });
  }

  close(): void {
    this.device.close();
  }
}

/** The deadline of a device call that sets none of its own. */
export const CALL_TIMEOUT_MS = 30_000;

/** Promisified unary call with a deadline. */
export function call<T>(
  fn: (md: Metadata, opts: { deadline: Date }, cb: (err: ServiceError | null, res?: T) => void) => unknown,
  timeoutMs = CALL_TIMEOUT_MS,
): Promise<T> {
  return new Promise((resolve, reject) => {
    fn(new Metadata(), { deadline: new Date(Date.now() + timeoutMs) }, (err, res) => (err ? reject(err) : resolve(res as T)));
  });
}

/** The server's stable error code (svc-error-code trailer) of a failed call. */
export function errorCode(err: unknown): string | undefined {
  const md = (err as ServiceError | undefined)?.metadata;
  return md?.get('svc-error-code')[0]?.toString();
}

/** Retrying helps: the server was unreachable or busy, not a refusal. */
export function isTransient(err: unknown): boolean {
  const code = (err as ServiceError | undefined)?.code;
  return (
    code === status.UNAVAILABLE ||
    code === status.DEADLINE_EXCEEDED ||
    code === status.RESOURCE_EXHAUSTED ||
    code === status.INTERNAL ||
    code === status.CANCELLED
  );
}
