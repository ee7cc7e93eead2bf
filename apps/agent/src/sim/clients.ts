import { type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';
import { DeviceServiceClient, EnrollmentServiceClient, RepositoryServiceClient, type EnrollResponse, type Inventory } from '@svc/device-proto';
import { call, DEVICE_CHANNEL_TLS_NAME, enrollmentCredentials } from '../channel/client.js';
import { simKeyAndCsr } from './sim-key.js';

/** What every simulated device reports as its inventory. */
export const SIM_INVENTORY: Inventory = { agentVersion: '0.1.0-sim', profile: 'linux-arm64', product: 'sim', slots: [], attributes: undefined };

/**
 * grpc-js channel options for thousands of channels in one process. Why each one:
 * - `use_local_subchannel_pool`: grpc-js's GLOBAL pool keeps one list per target and scans it
 *   linearly (options + credentials compared) for every new subchannel, and a 10 s cleanup
 *   timer walks it too. 10k devices dialling the same server made that O(N^2): the event loop
 *   spent minutes in the scan and calls timed out "Waiting for LB pick". One pool per device
 *   channel makes the lookup O(1); devices never share a connection anyway (own certificate).
 * - `enable_channelz: 0`: channelz keeps trace buffers and registry entries per channel and
 *   subchannel; pure memory and CPU per device here.
 * - `enable_retries: 0`: no retry buffering per call; the device's next tick is its retry.
 * - no client keepalive (grpc-js default when the option is absent) and a long idle timeout: no
 *   timer per connection; an idle device keeps its connection (the server's keepalive notices
 *   vanished peers).
 */
export const SIM_CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.ssl_target_name_override': DEVICE_CHANNEL_TLS_NAME,
  'grpc.default_authority': DEVICE_CHANNEL_TLS_NAME,
  'grpc.use_local_subchannel_pool': 1,
  'grpc.enable_channelz': 0,
  'grpc.enable_retries': 0,
  'grpc.client_idle_timeout_ms': 24 * 3600_000,
};

/** One simulated device's connection: its own mTLS credentials, one HTTP/2 connection. */
export class SimClients {
  readonly device: DeviceServiceClient;
  readonly repository: RepositoryServiceClient;

  constructor(server: string, creds: ChannelCredentials) {
    this.device = new DeviceServiceClient(server, creds, SIM_CHANNEL_OPTIONS);
    this.repository = new RepositoryServiceClient(server, creds, { ...SIM_CHANNEL_OPTIONS, channelOverride: this.device.getChannel() });
  }

  close(): void {
    this.device.close();
  }
}

/**
 * Enrollment for the whole simulated fleet. Enrollment is server-TLS only (no client
 * certificate), so every device uses the same few connections (`lanes`, round-robin), and
 * many Enroll calls are in flight on each at once (HTTP/2 streams): the server's group commit
 * (enroll-batch.ts) then takes them together, where one call per device at a time paid a
 * transaction each. Each device still makes its own P-256 key and CSR (the key never leaves).
 */
export class SimEnroller {
  private readonly lanes: EnrollmentServiceClient[];
  private next = 0;

  constructor(server: string, serverCaPem: string, lanes = 2) {
    const creds = enrollmentCredentials(serverCaPem);
    this.lanes = Array.from({ length: lanes }, () => new EnrollmentServiceClient(server, creds, SIM_CHANNEL_OPTIONS));
  }

  /**
   * One device's enrollment: key and CSR through node:crypto (sim-key.ts), the
   * answer kept as raw bytes. Many of these run at once over the same lanes, so the server's
   * group commit (enroll-batch.ts) takes them together.
   */
  async enrollCompact(o: { token: string; deviceName: string }): Promise<{ scalar: Buffer; certDer: Uint8Array; tenant: string }> {
    const { scalar, csrDer } = await simKeyAndCsr(o.deviceName);
    const client = this.lanes[this.next++ % this.lanes.length]!;
    const res = await call<EnrollResponse>((md, opts, cb) =>
      client.enroll({ token: o.token, deviceName: o.deviceName, csrDer, inventory: SIM_INVENTORY }, md, opts, cb),
    );
    return { scalar, certDer: res.certificateDer, tenant: res.tenantId };
  }

  close(): void {
    for (const c of this.lanes) c.close();
  }
}
