import type { ReleaseRow } from './queries.js';

/** A release as the API shows it: the record without its envelope bytes. */
export type ReleaseView = Omit<ReleaseRow, 'created_at'> & { created_at: string };

export function releaseJson(r: ReleaseRow): ReleaseView {
  return { ...r, created_at: r.created_at.toISOString() };
}
