/**
 * The steps of an artifact publish that commit before its record (spec §1 rule 2): stream the
 * file into the blob store while hashing, then commit the TUF targets metadata naming it. The
 * record and its audit row are inserted afterwards by a command (commands.ts
 * `recordPublishedArtifact`, registries' `recordImportedArtifact`). A crash between the two
 * leaves a signed target and no record; the retry re-publishes the identical entry (a no-op in
 * the repository) and inserts.
 */
import type { Digest } from '@svc/release-core';
import type { Readable } from 'node:stream';
import { isBlobError } from '../../blobs/index.js';
import { ServerError } from '../../errors/server-error.js';
import { isSigningRepoError } from '../../signing-repo/errors.js';
import { type PublishingDeps } from '../publishing.js';
import { artifactTargetPath, defaultMediaType, type ArtifactFields } from './fields.js';
import { artifactVersionExists, type NewArtifact } from './queries.js';
import { SERVER_LIMITS } from '../../limits.js';

/** Stream the bytes into the blob store (hashing on the way, capped): nothing is buffered whole. */
export async function storeArtifactBytes(deps: PublishingDeps, file: Readable | AsyncIterable<Uint8Array>): Promise<{ digest: Digest; length: number }> {
  const max = deps.maxArtifactBytes ?? SERVER_LIMITS.artifactBytes;
  try {
    return await deps.blobs.put(file, { maxBytes: max });
  } catch (e) {
    if (isBlobError(e) && e.code === 'BLOB_TOO_LARGE')
      throw new ServerError('ARTIFACT_TOO_LARGE', `file: larger than the ${max}-byte upload limit`, { cause: e });
    throw e;
  }
}

/**
 * Publishes stored bytes as a signed TUF target (committed by the signing repository before
 * this returns) and answers the record to insert. `source` says where the bytes came from
 * (`upload` or `registry:<id>`). Never call it inside a unit of work: the signing repository
 * commits its own transaction.
 */
export async function publishArtifactTarget(
  deps: PublishingDeps,
  tenantId: string,
  fields: ArtifactFields,
  blob: { digest: Digest; length: number },
  source = 'upload',
): Promise<NewArtifact> {
  // spec §7: a duplicate version conflicts (checked before touching the repository)
  if (await artifactVersionExists(deps.db, tenantId, fields.name, fields.version)) throw duplicateArtifact(fields);
  const mediaType = fields.media_type ?? defaultMediaType(fields.kind);
  const target = artifactTargetPath(fields);
  try {
    await deps.publishTargets(
      tenantId,
      [
        {
          path: target,
          digest: blob.digest,
          length: blob.length,
          custom: { kind: fields.kind, media_type: mediaType, name: fields.name, version: fields.version },
        },
      ],
      // a published artifact path never changes its bytes; an identical retry is a no-op
      { immutable: true },
    );
  } catch (e) {
    if (isSigningRepoError(e, 'TARGET_IMMUTABLE')) throw duplicateArtifact(fields, e);
    throw e;
  }
  await deps.hooks?.afterTargetsCommitted?.(target);
  return {
    name: fields.name,
    version: fields.version,
    kind: fields.kind,
    media_type: mediaType,
    filename: fields.filename,
    digest: blob.digest,
    length: blob.length,
    target,
    source,
  };
}

export function duplicateArtifact(f: { name: string; version: string }, cause?: unknown): ServerError {
  return new ServerError('ARTIFACT_EXISTS', `version: ${f.name} ${f.version} is already published`, { cause });
}
