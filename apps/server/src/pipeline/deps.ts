/**
 * What the pipeline needs from the rest of the server, as one narrow port: the database, the
 * content-addressed blob store, and the signing repository's publish call. Routes build it from
 * the AppContext; tests build it from a test store, a temp-dir blob store and a real repository.
 */
import type { Kysely } from 'kysely';
import type { BlobStore } from '../blobs/index.js';
import type { TargetEntry } from '../signing-repo/target-entry.js';
import type { Database } from '../store/database.js';

export interface PipelineHooks {
  /** Fault injection (tests): after the TUF metadata naming an artifact is committed, before the record insert. */
  afterTargetsCommitted?(target: string): void | Promise<void>;
}

export interface PipelineDeps {
  db: Kysely<Database>;
  blobs: BlobStore;
  /** The signing repository's atomic publish (spec 1.2: the artifact enters it before any record exists). */
  publishTargets(tenantId: string, entries: TargetEntry[], opts: { immutable?: boolean }): Promise<unknown>;
  clock(): Date;
  hooks?: PipelineHooks;
  /** Upload cap for one artifact file (STYLE 5). */
  maxArtifactBytes?: number;
}

export const DEFAULT_MAX_ARTIFACT_BYTES = 4 * 1024 * 1024 * 1024;
