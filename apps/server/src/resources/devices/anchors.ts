/**
 * Per-process anchors for deep device-list pages (spec §8 offset pagination).
 *
 * For one list (tenant + status + q) the name at every `every`-th position, read in one
 * snapshot together with the tenant's list version (migration 0010). A page at offset O
 * then starts its index walk at anchor floor(O / every) and skips fewer than `every`
 * entries, instead of walking O. The page statement reads the version again in its own
 * snapshot; resources/devices/queries/list.ts uses the page only if that version equals the anchors' and
 * otherwise answers with the plain walk, so a stale anchor is never served.
 *
 * Anchors are (re)built in the background after a deep request found none or stale ones,
 * at most once per list per `minRebuildMs`, and at most `maxLists` lists are kept (the
 * oldest built is dropped first). Memory: one name per `every` devices per list.
 */
export interface AnchorList {
  version: string;
  names: string[];
}

export interface DeviceListAnchorsOptions {
  every?: number;
  maxLists?: number;
  minRebuildMs?: number;
  clock?: () => number;
}

export class DeviceListAnchors {
  readonly every: number;
  private readonly maxLists: number;
  private readonly minRebuildMs: number;
  private readonly clock: () => number;
  private readonly lists = new Map<string, AnchorList>();
  private readonly building = new Set<string>();
  private readonly lastBuild = new Map<string, number>();

  constructor(options: DeviceListAnchorsOptions = {}) {
    this.every = options.every ?? 1000;
    this.maxLists = options.maxLists ?? 64;
    this.minRebuildMs = options.minRebuildMs ?? 1000;
    this.clock = options.clock ?? (() => performance.now());
  }

  get(key: string): AnchorList | undefined {
    return this.lists.get(key);
  }

  forget(key: string): void {
    this.lists.delete(key);
  }

  /** Starts `build` for `key` unless one is running or the last started under `minRebuildMs` ago. */
  refresh(key: string, build: () => Promise<AnchorList>, onError: (e: unknown) => void = () => {}): Promise<void> | undefined {
    const last = this.lastBuild.get(key);
    if (this.building.has(key) || (last !== undefined && this.clock() - last < this.minRebuildMs)) return undefined;
    this.building.add(key);
    if (this.lastBuild.size >= 16 * this.maxLists) this.lastBuild.clear(); // q is free text: bound the bookkeeping
    this.lastBuild.set(key, this.clock());
    return build()
      .then((list) => {
        this.lists.delete(key);
        if (this.lists.size >= this.maxLists) {
          const oldest = this.lists.keys().next();
          if (oldest.done !== true) this.lists.delete(oldest.value);
        }
        this.lists.set(key, list);
      }, onError)
      .finally(() => this.building.delete(key));
  }
}
