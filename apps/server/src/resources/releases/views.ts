import type { ReleaseRow } from './queries.js';

export interface ReleaseView {
  id: string;
  product: string;
  version: string;
  payload_digest: string;
  envelope_digest: string;
  keyid: string;
  target: string;
  created_at: string;
}

export function releaseJson(r: ReleaseRow): ReleaseView {
  return {
    id: r.id,
    product: r.product,
    version: r.version,
    payload_digest: r.payload_digest,
    envelope_digest: r.envelope_digest,
    keyid: r.keyid,
    target: r.target,
    created_at: r.created_at.toISOString(),
  };
}
