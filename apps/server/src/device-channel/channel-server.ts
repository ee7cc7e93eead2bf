import { Server } from '@grpc/grpc-js';
import { sha256Digest } from '@svc/release-core';
import { DeviceServiceService, EnrollmentServiceService, RepositoryServiceService } from '@svc/device-proto';
import type { DeviceChannelContext } from './context.js';
import { DeviceChannelCredentials } from './credentials.js';
import { deviceService } from './device-service.js';
import { enrollmentService } from './enrollment-service.js';
import { guardedService, refusedMessageInterceptor, refuseFramingHeaders } from './message-guard.js';
import { repositoryService } from './repository-service.js';
import type { ServerTls } from './server-tls.js';
import { DEVICE_CAS_CHANNEL } from '../store/migrations/0036_device_ca_notify.js';
import type { Store } from '../store/open.js';

export interface DeviceChannelServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** The bundle port (bundle-server.ts), when one was asked for. */
  readonly bundlePort?: number;
  /** Stops accepting calls, lets running ones finish for up to `graceMs`, then cuts them. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The device gRPC channel on one port (SVC_DEVICE_ADDR, e.g. `127.0.0.1:8443` or
 * `127.0.0.1:0` in tests): enrollment (no client certificate) and the mTLS services.
 */
export async function startDeviceChannel(
  ctx: DeviceChannelContext,
  tls: ServerTls,
  addr: string,
  opts: {
    trustRefreshMs?: number;
    listen?: Store['listen'];
    /** Other listeners with the device port's trust (the bundle port): given every new set of device CAs too. */
    alsoTrusting?: readonly { setDeviceCas(ders: readonly Uint8Array[]): void }[];
  } = {},
): Promise<DeviceChannelServer> {
  const initial = await ctx.cas.allCertificates(ctx.now());
  const creds = new DeviceChannelCredentials(tls, initial);
  let trusted = trustKey(initial);
  // Another server process may create or rotate a tenant CA: its NOTIFY (migration 0036)
  // re-reads the set at once; the periodic re-read covers the time the listener is
  // reconnecting and drops a retired CA whose trust window ended. This process's own changes
  // are trusted at once. A changed set also makes the CA store forget what it read, so a
  // rotation done elsewhere issues from the new CA here too.
  const refresh = (): Promise<void> =>
    ctx.cas.allCertificates(ctx.now()).then(
      (ders) => {
        const key = trustKey(ders);
        if (key === trusted) return;
        trusted = key;
        creds.setDeviceCas(ders);
        for (const other of opts.alsoTrusting ?? []) other.setDeviceCas(ders);
        ctx.cas.invalidate();
      },
      (err: unknown) => ctx.log.error({ err }, 'device CA trust refresh failed'),
    );
  ctx.cas.onChanged = refresh;
  const listener = opts.listen === undefined ? undefined : await opts.listen(DEVICE_CAS_CHANNEL, () => void refresh());
  const timer = setInterval(() => void refresh(), opts.trustRefreshMs ?? 30_000);
  timer.unref();
  const server = new Server({
    // receipts and log chunks are far below this; refuse anything larger before decoding
    'grpc.max_receive_message_length': 1024 * 1024,
    // a device that vanished without closing its connection is noticed within minutes
    'grpc.keepalive_time_ms': 120_000,
    'grpc.keepalive_timeout_ms': 20_000,
    // channelz keeps a registry entry, call counters and a trace buffer per connection: memory
    // per connected device and nothing reads it
    'grpc.enable_channelz': 0,
    // undecodable messages, text breaking the input rule and calls beyond the connection cap
    // never reach a handler
    interceptors: [refusedMessageInterceptor(ctx.log, ctx.admission)],
  });
  server.addService(guardedService(EnrollmentServiceService), enrollmentService(ctx));
  server.addService(guardedService(DeviceServiceService), deviceService(ctx));
  server.addService(guardedService(RepositoryServiceService), repositoryService(ctx));
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(addr, creds, (err, p) => (err ? reject(err) : resolve(p)));
  });
  refuseFramingHeaders(server);
  ctx.admission.attach(server);
  ctx.connections.attach(server);
  return {
    port,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        clearInterval(timer);
        void listener?.close();
        ctx.cas.onChanged = undefined;
        const forceTimer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(forceTimer);
          resolve();
        });
      }).then(() => ctx.lastSeen.close()),
  };
}

/** The identity of a set of trusted CA certificates (their digests in order). */
function trustKey(ders: readonly Uint8Array[]): string {
  return ders.map((d) => sha256Digest(d)).join(' ');
}
