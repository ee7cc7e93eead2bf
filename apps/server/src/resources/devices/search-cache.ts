/**
 * Per-process memory of `q` search pages (GET /devices?q=): for one page of one search (tenant,
 * status, q, limit, offset) the names on it and the search's total, with the tenant's list
 * version (migration 0010) they were read at.
 *
 * The version is bumped in the changing transaction whenever a device is added or removed or
 * changes name or status, so while it is unchanged the set and order of the names a `q` (a
 * substring of the name) selects are unchanged. The page statement reads the version in its
 * own snapshot and uses the remembered names and total only when it equals theirs; otherwise
 * it walks and counts (resources/devices/queries/list.ts). The items themselves (`list_json`:
 * last seen, versions, certificate) are always read in that snapshot. A stale entry is never
 * served; another process's change bumps the version like a local one.
 *
 * Not for a device filter (docs/device-filter.md): tags and attributes change without a bump.
 * Bounded: at most `SERVER_TUNING.deviceSearchCachePages` pages (the oldest written is dropped
 * first), each at most a page of names (200).
 */
import { SERVER_TUNING } from '../../limits.js';

export interface SearchPage {
  version: string;
  total: number;
  names: string[];
}

export class DeviceSearchCache {
  private readonly maxPages: number;
  private readonly pages = new Map<string, SearchPage>();

  constructor(options: { maxPages?: number } = {}) {
    this.maxPages = options.maxPages ?? SERVER_TUNING.deviceSearchCachePages;
  }

  get(key: string): SearchPage | undefined {
    return this.pages.get(key);
  }

  set(key: string, page: SearchPage): void {
    this.pages.delete(key);
    if (this.pages.size >= this.maxPages) {
      const oldest = this.pages.keys().next();
      if (oldest.done !== true) this.pages.delete(oldest.value);
    }
    this.pages.set(key, page);
  }

  get size(): number {
    return this.pages.size;
  }
}
