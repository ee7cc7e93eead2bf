import type { BlobInfo, BlobStore } from '../blobs/index.js';
import type { KeyStore } from './keys.js';
import type { RepoDb } from './repo-db.js';

/**
 * Fault-injection points of the publish flow (tests): a throw (or a process kill)
 * at either point must leave no partial metadata behind, and a retry must succeed.
 */
export interface PublishHooks {
  /** After the payload blob is durably stored, before the metadata transaction starts. */
  afterBlobStored?(info: BlobInfo): void | Promise<void>;
  /** Inside the metadata transaction, after every row is inserted, before COMMIT. */
  beforeCommit?(tenantId: string): void | Promise<void>;
}

/** What every part of the signing repository works with. */
export interface RepoContext {
  db: RepoDb;
  blobs: BlobStore;
  keys: KeyStore;
  clock: () => Date;
  hooks: PublishHooks;
}
