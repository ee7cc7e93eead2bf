/**
 * What publishing artifacts and releases (and starting their rollouts) needs from the rest of the server, as one narrow port: the database, the
 * content-addressed blob store, and the signing repository's publish call. Routes build it from
 * the AppContext; tests build it from a test store, a temp-dir blob store and a real repository.
 */
import type { Kysely } from 'kysely';
import type { BlobStore } from '../blobs/index.js';
import type { TargetEntry } from '../signing-repo/target-entry.js';
import type { Database } from '../store/database.js';

export interface PublishingHooks {
  /** Fault injection (tests): after the TUF metadata naming an artifact is committed, before the record insert. */
  afterTargetsCommitted?(target: string): void | Promise<void>;
}

export interface PublishingDeps {
  db: Kysely<Database>;
  blobs: BlobStore;
  /** The signing repository's atomic publish (spec §1 rule 2: the artifact enters it before any record exists). */
  publishTargets(tenantId: string, entries: TargetEntry[], opts: { immutable?: boolean }): Promise<unknown>;
  clock(): Date;
  hooks?: PublishingHooks;
  /** Upload cap for one artifact file. */
  maxArtifactBytes?: number;
}

/** AppContext.publishing: optional settings and fault-injection hooks. */
export interface PublishingOptions {
  hooks?: PublishingHooks;
  maxArtifactBytes?: number;
}

/**
 * The publishing port from the app context. The repository is created per tenant on first use
 * (ensureTenantRepo is idempotent and multi-process safe) so a fresh tenant can publish at once.
 */
export function publishingDeps(ctx: {
  store: { db: Kysely<Database> };
  now(): Date;
  signingRepo?: {
    blobs: BlobStore;
    ensureTenantRepo(tenantId: string): Promise<unknown>;
    publishTargets(tenantId: string, entries: TargetEntry[], opts: { immutable?: boolean }): Promise<unknown>;
  };
  publishing?: PublishingOptions;
}): PublishingDeps {
  const repo = ctx.signingRepo;
  if (!repo) throw new Error('AppContext.signingRepo is required by the publishing routes');
  const deps: PublishingDeps = {
    db: ctx.store.db,
    blobs: repo.blobs,
    publishTargets: async (tenantId, entries, opts) => {
      await repo.ensureTenantRepo(tenantId);
      return repo.publishTargets(tenantId, entries, opts);
    },
    clock: () => ctx.now(),
  };
  if (ctx.publishing?.hooks) deps.hooks = ctx.publishing.hooks;
  if (ctx.publishing?.maxArtifactBytes !== undefined) deps.maxArtifactBytes = ctx.publishing.maxArtifactBytes;
  return deps;
}
