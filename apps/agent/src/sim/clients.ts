import { type ChannelOptions } from '@grpc/grpc-js';
import { EnrollmentServiceClient, type EnrollResponse, type Inventory } from '@svc/device-proto';
import { call, DEVICE_CHANNEL_TLS_NAME, enrollmentCredentials } from '../channel/client.js';
import { simKeyAndCsr } from './sim-key.js';

/** What every simulated device reports as its inventory. */
export const SIM_INVENTORY: Inventory = { agentVersion: '0.1.0-sim', profile: 'linux-arm64', product: 'sim', slots: [], attributes: undefined };

/**
 * grpc-js channel options of the enrollment lanes (device connections are wire.ts's):
 * `use_local_subchannel_pool` so closing the enroller ends its connections, no channelz trace
 * buffers, no retry buffering (a failed enrollment is counted, not retried), no idle timeout
 * while a large fleet enrolls.
 */
export const SIM_CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.ssl_target_name_override': DEVICE_CHANNEL_TLS_NAME,
  'grpc.default_authority': DEVICE_CHANNEL_TLS_NAME,
  'grpc.use_local_subchannel_pool': 1,
  'grpc.enable_channelz': 0,
  'grpc.enable_retries': 0,
  'grpc.client_idle_timeout_ms': 24 * 3600_000,
};

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
