/**
 * What the pipeline needs from the rest of the server, as one narrow port: the database, the
 * content-addressed blob store, and the signing repository's publish call. Routes build it from
 * the AppContext; tests build it from a test store, a temp-dir blob store and a real repository.
 */
import type { Kysely } from 'kysely';
import type { BlobStore } from '../blobs/index.js';
import type { TargetEntry } from '../signing-repo/target-entry.js';
import type { Database } from '../store/database.js';
import {} from '../limits.js';

export interface PipelineHooks {
  /** Fault injection (tests): after the TUF metadata naming an artifact is committed, before the record insert. */
  afterTargetsCommitted?(target: string): void | Promise<void>;
}

export interface PipelineDeps {
  db: Kysely<Database>;
  blobs: BlobStore;
  /** The signing repository's atomic publish (spec §1 rule 2: the artifact enters it before any record exists). */
  publishTargets(tenantId: string, entries: TargetEntry[], opts: { immutable?: boolean }): Promise<unknown>;
  clock(): Date;
  hooks?: PipelineHooks;
  /** Upload cap for one artifact file. */
  maxArtifactBytes?: number;
}

/** AppContext.pipeline: optional settings and fault-injection hooks. */
export interface PipelineOptions {
  hooks?: PipelineHooks;
  maxArtifactBytes?: number;
}

/**
 * The pipeline's port from the app context. The repository is created per tenant on first use
 * (ensureTenantRepo is idempotent and multi-process safe) so a fresh tenant can publish at once.
 */
export function pipelineDeps(ctx: {
  store: { db: Kysely<Database> };
  now(): Date;
  signingRepo?: {
    blobs: BlobStore;
    ensureTenantRepo(tenantId: string): Promise<unknown>;
    publishTargets(tenantId: string, entries: TargetEntry[], opts: { immutable?: boolean }): Promise<unknown>;
  };
  pipeline?: PipelineOptions;
}): PipelineDeps {
  const repo = ctx.signingRepo;
  if (!repo) throw new Error('AppContext.signingRepo is required by the pipeline routes');
  const deps: PipelineDeps = {
    db: ctx.store.db,
    blobs: repo.blobs,
    publishTargets: async (tenantId, entries, opts) => {
      await repo.ensureTenantRepo(tenantId);
      return repo.publishTargets(tenantId, entries, opts);
    },
    clock: () => ctx.now(),
  };
  if (ctx.pipeline?.hooks) deps.hooks = ctx.pipeline.hooks;
  if (ctx.pipeline?.maxArtifactBytes !== undefined) deps.maxArtifactBytes = ctx.pipeline.maxArtifactBytes;
  return deps;
}
