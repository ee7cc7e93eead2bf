/** spec §8: page parameters after validation. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export interface Page {
  limit: number;
  offset: number;
}

/** Schema validation already refused negative/garbage values (400 naming the field); this clamps. */
export function page(query: { limit?: number | undefined; offset?: number | undefined }): Page {
  // spec §8: values above 200 are clamped to 200.
  const limit = Math.min(query.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  const offset = query.offset ?? 0;
  return { limit, offset };
}

/** Escapes LIKE wildcards so `q` is matched literally (`%`, `_` and `\` are data, not syntax). */
export function likeContains(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
