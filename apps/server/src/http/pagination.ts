import { inSnapshot, type Db, type Snapshot } from '../store/tx.js';
import { SERVER_LIMITS } from '../limits.js';

/** spec §8: page parameters after validation. */
export interface Page {
  limit: number;
  offset: number;
}

/** Schema validation already refused negative/garbage values (400 naming the field); this clamps. */
export function page(query: { limit?: number | undefined; offset?: number | undefined }): Page {
  // spec §8: values above 200 are clamped to 200.
  const limit = Math.min(query.limit ?? SERVER_LIMITS.pageLimitDefault, SERVER_LIMITS.pageLimit);
  const offset = query.offset ?? 0;
  return { limit, offset };
}

/** What a list's reads answer: the page's items, `total` and `counts`, and any further properties of the answer. */
export interface ListRead {
  items: unknown[];
  total: number;
  counts: unknown;
}

/** A list answer (spec §8): the items under the list's key, then the page fields, `counts` and the rest. */
export type ListAnswer<K extends string, R extends ListRead> = { [P in K]: R['items'] } & Omit<R, 'items'> & Page;

/**
 * spec §8: one list route's answer. Clamps the page parameters (`page()`) and runs `read` in one
 * snapshot (store/tx.ts inSnapshot), so that the page, its `total` and its `counts` describe the
 * same data; the answer carries the items under `key` with the `limit` and `offset` used. Its
 * response schema is `PageOf(key, ...)` (http/schemas.ts).
 */
export function listPage<K extends string, R extends ListRead>(
  db: Db,
  query: { limit?: number | undefined; offset?: number | undefined },
  key: K,
  read: (snap: Snapshot, page: Page) => Promise<R>,
): Promise<ListAnswer<K, R>> {
  return inSnapshot(db, async (snap) => {
    const p = page(query);
    const { items, ...rest } = await read(snap, p);
    return { [key]: items, ...rest, ...p } as ListAnswer<K, R>;
  });
}

/** Escapes LIKE wildcards so `q` is matched literally (`%`, `_` and `\` are data, not syntax). */
export function likeContains(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
