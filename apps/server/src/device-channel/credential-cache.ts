import { DEVICE_CREDENTIALS_CHANNEL } from '../store/migrations/0042_device_credential_notify.js';
import { NotifiedCache, type NotifiedCacheOptions } from '../store/notified-cache.js';
import type { Store } from '../store/open.js';
import { SERVER_TUNING } from '../limits.js';

/** What an authentication that succeeded read of the device row. */
export interface DeviceCredential {
  deviceId: string;
}

/** The cache key of a certificate presented as a device's (device names never contain `/`). */
export function credentialKey(tenantId: string, deviceName: string, fingerprint: string): string {
  return `${tenantId}/${deviceName}/${fingerprint}`;
}

/**
 * Device authentications remembered per process, keyed by tenant, device name and certificate
 * fingerprint, so a device call costs no database round trip for its authentication. Only
 * success is remembered: the device existed, was not decommissioned, and the certificate was
 * its current one. Everything that can change that (decommissioning, deletion, a new current
 * certificate: migration 0042) clears every process's cache at COMMIT; the rules for a
 * listener that is down and reads racing a clear are NotifiedCache's.
 *
 * Entries live an hour, not NotifiedCache's 10 s: a device calls about once per check-in
 * interval (60 s by default, 10 minutes in a large fleet's), so a 10 s entry would almost never
 * answer, and one of 10 minutes missed about every other check-in of a fleet calling every 10
 * minutes +-10 %. The bound on entries (SERVER_TUNING) likewise covers a whole fleet one process serves,
 * since the oldest entry goes first and a fleet connecting per check-in comes back in a cycle.
 * Staleness is bounded
 * by the listener instead: it is live only while a fence query proved, less than 10 s ago, that
 * it heard every change committed before (store/notify.ts), so an answer is never more than
 * 10 s behind the database, whatever the entry's age. The certificate's own validity window is
 * checked on every call, never cached here.
 */
export class DeviceCredentialCache extends NotifiedCache<DeviceCredential> {
  /** The keys remembered per device (`tenant/name`) since the last clear: what forgetDevice drops. */
  private readonly byDevice = new Map<string, string[]>();
  private readonly maxDevices: number;

  constructor(listener: ConstructorParameters<typeof NotifiedCache<DeviceCredential>>[0], options: NotifiedCacheOptions = {}) {
    super(listener, options);
    this.maxDevices = 2 * (options.maxEntries ?? 10_000);
  }

  override remember(key: string, value: DeviceCredential, generation: number): void {
    if (generation !== this.begin()) return;
    const device = key.slice(0, key.lastIndexOf('/'));
    const keys = this.byDevice.get(device);
    if (keys === undefined) {
      // the index outgrew the entries it tracks (evicted ones stay listed): start both afresh
      if (this.byDevice.size >= this.maxDevices) this.clear();
      this.byDevice.set(device, [key]);
    } else if (!keys.includes(key)) keys.push(key);
    super.remember(key, value, generation);
  }

  override clear(): void {
    super.clear();
    this.byDevice.clear();
  }

  /**
   * Forgets every certificate remembered for one device (its re-enrollment made another one
   * current), leaving the rest of the fleet's authentications in place. A device enrolled for
   * the first time has nothing to forget.
   */
  forgetDevice(tenantId: string, deviceName: string): void {
    const device = `${tenantId}/${deviceName}`;
    const keys = this.byDevice.get(device);
    this.byDevice.delete(device);
    this.forget(keys ?? []);
  }

  /** Opens the store's change listener and a cache cleared by it. */
  static async open(listen: Store['listen'], options: NotifiedCacheOptions = {}): Promise<{ cache: DeviceCredentialCache; close(): Promise<void> }> {
    // eslint-disable-next-line prefer-const -- assigned after the listener that reads it is opened
    let cache: DeviceCredentialCache | undefined;
    const listener = await listen(DEVICE_CREDENTIALS_CHANNEL, () => cache?.clear());
    cache = new DeviceCredentialCache(listener, {
      maxEntries: SERVER_TUNING.deviceCredentialCacheEntries,
      ttlMs: SERVER_TUNING.deviceCredentialCacheTtlMs,
      ...options,
    });
    return { cache, close: () => listener.close() };
  }
}
