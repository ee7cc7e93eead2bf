import type { Kysely } from 'kysely';
import type { UnitOfWorkHooks } from '../resources/unit-of-work.js';
import type { Database } from '../store/database.js';
import type { Store } from '../store/open.js';
import { AssignmentPointers } from './assignment-pointers.js';
import { startBundleServer } from './bundle-server.js';
import { startDeviceChannel, type DeviceChannelServer } from './channel-server.js';
import { CHANNEL_DEFAULTS, type DeviceChannelContext } from './context.js';
import { ConnectionAdmission } from './admission.js';
import { ConnectionCertificates } from './connections.js';
import { DeviceCredentialCache } from './credential-cache.js';
import { DeviceCaStore } from './device-ca.js';
import { EnrollmentBatcher } from './enroll-batch.js';
import { LastSeenBuffer } from './last-seen.js';
import type { ChannelLogger } from './grpc-status.js';
import type { RepositoryPort } from './ports.js';
import { ReceiptPipeline } from './receipt-pipeline.js';
import { defaultVerifyThreads, ReceiptVerifier } from './receipt-verifier.js';
import { ensureServerTls } from './server-tls.js';
import type { WrappedKeys } from '../key-custody/wrapped-keys.js';

export interface DeviceChannelOptions {
  db: Kysely<Database>;
  /**
   * The store's change notifications (`store.listen`): they clear the device authentication
   * cache, and another process's new tenant CA is trusted at once.
   */
  listen: Store['listen'];
  /** That cache when the caller opened it (main.ts shares it with the REST API); opened here otherwise. */
  credentials?: DeviceCredentialCache;
  /** SVC_DATA_DIR: the server CA certificate (public) is written to `ca/server/ca.pem` for agents to pin; its keys are wrapped keys. */
  dataDir: string;
  /** Where the server CA and the device CA keys are kept, wrapped by the KEK (main.ts: the signing repository's). */
  keys: WrappedKeys;
  /** SVC_DEVICE_ADDR, `host:port` (port 0 in tests). */
  addr: string;
  /** SVC_DEVICE_BUNDLE_ADDR: the bundle port for RAUC streaming (bundle-server.ts); none when absent. */
  bundleAddr?: { host: string; port: number };
  /** The signing repository (its `openRepoFile`). */
  repository: RepositoryPort;
  log: ChannelLogger;
  now?: () => Date;
  checkInIntervalS?: number;
  certValidDays?: number;
  renewBeforeDays?: number;
  trustRefreshMs?: number;
  /** `SVC_DEVICE_MAX_CONNECTIONS`: device connections held at once (default CHANNEL_DEFAULTS.maxConnections). */
  maxConnections?: number;
  /** `SVC_DEVICE_RETRY_AFTER_S` in ms: the wait a refused device is told (default CHANNEL_DEFAULTS.retryAfterMs). */
  retryAfterMs?: number;
  /** Receipt verification threads (`SVC_RECEIPT_VERIFY_THREADS`; default: receipt-verifier.ts defaultVerifyThreads). */
  verifyThreads?: number;
  /** Fault-injection seams for tests (never set by main.ts). */
  hooks?: { unitOfWork?: UnitOfWorkHooks };
}

/**
 * Builds the device channel from the real neighbours (rollouts seam, signing repository) and
 * starts it. `main.ts` calls this once; tests too.
 */
export async function startDeviceChannelService(o: DeviceChannelOptions): Promise<{ server: DeviceChannelServer; ctx: DeviceChannelContext }> {
  const now = o.now ?? (() => new Date());
  const host = o.addr.slice(0, o.addr.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  const tls = await ensureServerTls(o.keys, host ? [host] : [], now(), o.dataDir);
  const cas = new DeviceCaStore(o.db, o.keys);
  const { cache: credentials, close: closeCredentials } =
    o.credentials === undefined ? await DeviceCredentialCache.open(o.listen) : { cache: o.credentials, close: async () => undefined };
  const verifier = new ReceiptVerifier(o.verifyThreads ?? defaultVerifyThreads(), o.log);
  const ctx: DeviceChannelContext = {
    db: o.db,
    cas,
    credentials,
    connections: new ConnectionCertificates(),
    admission: new ConnectionAdmission(
      o.maxConnections ?? CHANNEL_DEFAULTS.maxConnections,
      o.retryAfterMs ?? CHANNEL_DEFAULTS.retryAfterMs,
      CHANNEL_DEFAULTS.refusedLingerMs,
    ),
    lastSeen: new LastSeenBuffer(o.db, o.log),
    enrollments: new EnrollmentBatcher(o.db),
    serverCaDer: tls.caDer,
    assignments: new AssignmentPointers(),
    receipts: new ReceiptPipeline({ db: o.db, cas, now, hooks: o.hooks?.unitOfWork, verifier }),
    repository: o.repository,
    now,
    log: o.log,
    checkInIntervalS: o.checkInIntervalS ?? CHANNEL_DEFAULTS.checkInIntervalS,
    certValidDays: o.certValidDays ?? CHANNEL_DEFAULTS.certValidDays,
    renewBeforeDays: o.renewBeforeDays ?? CHANNEL_DEFAULTS.renewBeforeDays,
    ...(o.hooks ? { hooks: o.hooks } : {}),
  };
  const bundles =
    o.bundleAddr === undefined
      ? undefined
      : await startBundleServer(ctx, tls, o.bundleAddr).catch(async (e: unknown) => {
          await Promise.all([closeCredentials(), verifier.close()]);
          throw e;
        });
  const channel = await startDeviceChannel(ctx, tls, o.addr, {
    ...(o.trustRefreshMs === undefined ? {} : { trustRefreshMs: o.trustRefreshMs }),
    listen: o.listen,
    alsoTrusting: bundles === undefined ? [] : [bundles],
  }).catch(async (e: unknown) => {
    await Promise.all([closeCredentials(), verifier.close(), bundles?.close()]);
    throw e;
  });
  const server: DeviceChannelServer = {
    port: channel.port,
    ...(bundles === undefined ? {} : { bundlePort: bundles.port }),
    close: (graceMs) =>
      Promise.all([channel.close(graceMs), bundles?.close()])
        .then(closeCredentials)
        .then(() => verifier.close()),
  };
  return { server, ctx };
}
