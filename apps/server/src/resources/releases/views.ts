/** A release as the API shows it (schemas.ts `Release`): the record without its envelope bytes. */
import type { ReleaseRow } from './queries.js';
import type { ReleaseView } from './schemas.js';

export function releaseJson(r: ReleaseRow): ReleaseView {
  return { ...r, created_at: r.created_at.toISOString() };
}
