import { DEVICE_CREDENTIALS_CHANNEL } from '../store/migrations/0042_device_credential_notify.js';
import { NotifiedCache, type NotifiedCacheOptions } from '../store/notified-cache.js';
import type { Store } from '../store/open.js';
import { SERVER_TUNING } from '../limits.js';

/**
 * Device authentications remembered per process, so a device call costs no database round trip
 * for its authentication: certificate fingerprint -> the id of the device it belongs to. Only
 * success is remembered: the device existed, was not decommissioned, and the certificate was
 * its current one. The fingerprint alone is the key: it is the digest of a certificate that
 * names its tenant and device (peer.ts reads both from it). Everything that can change that
 * (decommissioning, deletion, a new current certificate: migration 0042) clears every
 * process's cache at COMMIT; the rules for a listener that is down and reads racing a clear are
 * NotifiedCache's.
 *
 * Entries live an hour, not NotifiedCache's 10 s: a device calls about once per check-in
 * interval (60 s by default, 10 minutes in a large fleet's), so a 10 s entry would almost never
 * answer, and one of 10 minutes missed about every other check-in of a fleet calling every 10
 * minutes +-10 %. The bound on entries (SERVER_TUNING) likewise covers a whole fleet one process
 * serves, since the oldest entry goes first and a fleet connecting per check-in comes back in a
 * cycle; an entry is a fingerprint string the certificate check's cache holds too (peer.ts) and
 * a device id, about 100 bytes. Staleness is bounded by the listener instead: it is live only
 * while a fence query proved, less than 10 s ago, that it heard every change committed before
 * (store/notify.ts), so an answer is never more than 10 s behind the database, whatever the
 * entry's age. The certificate's own validity window is checked on every call, never cached here.
 */
export class DeviceCredentialCache extends NotifiedCache<string> {
  /**
   * When each device enrolled through this process was forgotten (tenant -> name -> clock),
   * since the last clear: an entry for its certificates remembered then or before no longer
   * answers. Bounded: past SERVER_TUNING.forgottenDeviceEntries the whole cache is cleared.
   */
  private forgotten = new Map<string, Map<string, number>>();
  private forgottenCount = 0;

  /** The id of the device this certificate authenticated as, when remembered and not forgotten since. */
  deviceIdOf(tenantId: string, deviceName: string, fingerprint: string): string | undefined {
    return this.lookup(fingerprint, this.forgotten.get(tenantId)?.get(deviceName));
  }

  override clear(): void {
    super.clear();
    this.forgotten = new Map();
    this.forgottenCount = 0;
  }

  /**
   * Forgets every certificate remembered for one device (its re-enrollment made another one
   * current), leaving the rest of the fleet's authentications in place. A device enrolled for
   * the first time has nothing to forget.
   */
  forgetDevice(tenantId: string, deviceName: string): void {
    if (this.forgottenCount >= SERVER_TUNING.forgottenDeviceEntries) {
      this.clear();
      return;
    }
    let names = this.forgotten.get(tenantId);
    if (names === undefined) {
      names = new Map();
      this.forgotten.set(tenantId, names);
    }
    if (!names.has(deviceName)) this.forgottenCount += 1;
    names.set(deviceName, this.clock());
    this.invalidate();
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
