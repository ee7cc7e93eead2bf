import { IDENTIFIER_PATTERNS, type Digest } from '@svc/release-core';
import { assertBlobDigest, isBlobError } from '../blobs/index.js';
import { SigningRepoError } from './errors.js';
import { assertTargetPath } from './target-path.js';
import { SERVER_LIMITS } from '../limits.js';

/** One target to add or replace in a tenant's targets metadata. */
export interface TargetEntry {
  /** Target path, e.g. `artifacts/<name>/<version>/<file>` (see assertTargetPath). */
  path: string;
  /** contracts §1: `sha256:<hex>`; the blob must already be in the BlobStore. */
  digest: Digest;
  length: number;
  /** TUF `custom` object (JSON), e.g. `{ media_type, artifact_id }`. */
  custom?: Record<string, unknown>;
}

/** A target as the repository reports it. */
export interface TargetInfo extends TargetEntry {
  /** Consistent-snapshot file path a client downloads: `<dir>/<sha256hex>.<basename>`. */
  hashedPath: string;
}

/** Narrows untrusted entries, naming the bad field (`targets[1].digest`). */
export function assertTargetEntries(value: unknown): TargetEntry[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > SERVER_LIMITS.targetsPerPublish) {
    throw new SigningRepoError('TARGET_INVALID', `targets must be an array of 1 to ${SERVER_LIMITS.targetsPerPublish} entries`);
  }
  const seen = new Set<string>();
  return value.map((raw: unknown, i) => {
    const field = `targets[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new SigningRepoError('TARGET_INVALID', `${field} must be an object`);
    }
    const { path, digest, length, custom } = raw as Record<string, unknown>;
    const p = assertTargetPath(path, `${field}.path`);
    if (seen.has(p)) throw new SigningRepoError('TARGET_INVALID', `${field}.path ${JSON.stringify(p)} appears twice`);
    seen.add(p);
    let d: Digest;
    try {
      d = assertBlobDigest(digest, `${field}.digest`);
    } catch (e) {
      if (isBlobError(e)) throw new SigningRepoError('TARGET_INVALID', e.message, { cause: e });
      throw e;
    }
    if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
      throw new SigningRepoError('TARGET_INVALID', `${field}.length must be a non-negative integer`);
    }
    const entry: TargetEntry = { path: p, digest: d, length };
    if (custom !== undefined) entry.custom = assertCustom(custom, `${field}.custom`);
    return entry;
  });
}

function assertCustom(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SigningRepoError('TARGET_INVALID', `${field} must be a JSON object`);
  }
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (e) {
    throw new SigningRepoError('TARGET_INVALID', `${field} must be JSON-serializable`, { cause: e });
  }
  // custom ends up in every device's targets.json, keep it small
  if (Buffer.byteLength(json) > SERVER_LIMITS.targetCustomBytes) {
    throw new SigningRepoError('TARGET_INVALID', `${field} must be at most ${SERVER_LIMITS.targetCustomBytes} bytes of JSON`);
  }
  return JSON.parse(json) as Record<string, unknown>;
}

/** `custom.media_type` when it is a plain media type: served as Content-Type. */
export function mediaTypeOf(custom: Record<string, unknown> | undefined): string | null {
  const mt = custom?.['media_type'];
  return typeof mt === 'string' && IDENTIFIER_PATTERNS.mediaType.test(mt) ? mt : null;
}
