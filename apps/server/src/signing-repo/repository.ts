import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { digestFromHex, digestHex, hashedTargetPath, type Digest } from '@svc/release-core';
import type { Kysely, Transaction } from 'kysely';
import type { BlobPutOptions, BlobStore, ByteRangeRequest } from '../blobs/index.js';
import { FsBlobStore } from '../blobs/index.js';
import type { PublishHooks, RepoContext } from './context.js';
import { SigningRepoError } from './errors.js';
import { upgradeAllKeyIds, type KeyIdUpgradeResult } from './key-id-upgrade.js';
import { KeyStore } from './keys.js';
import { inspectAllRoleKeys, rotateLostOnlineKeys, type RoleKeyReport } from './key-inspection.js';
import type { OnlineRole } from './chain.js';
import { buildRoot, buildSnapshot, buildTargets, buildTimestamp, decodeTargets, encodeMetadata, signWith } from './metadata.js';
import { publishTargets, type PublishOptions, type PublishResult } from './publish.js';
import { refreshAllDue, refreshIfDue, type RefreshResult } from './refresh.js';
import { retireTargets, type RetireResult } from './retire.js';
import { getMetadataFile, openRepoFile, type MetadataFile, type RepoFile } from './repo-files.js';
import { insertMetadata, latestMetadata, repoExists, type RepoDb, type RepoTx } from './repo-db.js';
import { rotateRoot, type RotateRootOptions } from './root-rotation.js';
import {
  acceptSignedRoot,
  cancelOnlineKeyRotation,
  pendingOnlineKeyRotation,
  prepareOnlineKeyRotation,
  rotateOnlineKeys,
  type OnlineKeyRotation,
  type PendingOnlineKeyRotation,
} from './online-key-rotation.js';
import { assertTargetEntries, type TargetEntry, type TargetInfo } from './target-entry.js';
import { assertTargetPath } from './target-path.js';
import { assertTenantId } from './tenant-id.js';
import { tufExpires } from './expiry.js';
import { defaultWrappedKeys } from '../key-custody/kek-source.js';
import type { WrappedKeys } from '../key-custody/wrapped-keys.js';
import type { Database } from '../store/database.js';

export interface SigningRepositoryOptions {
  /** The server's kysely handle (any Database that includes SigningRepoTables, migration 0005 applied). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema that includes SigningRepoTables
  db: Kysely<any>;
  /** Payload storage; default `new FsBlobStore(<dataDir>/blobs)`. */
  blobs?: BlobStore;
  /** SVC_DATA_DIR: blobs (by default) go to `<dataDir>/blobs/`. */
  dataDir: string;
  /**
   * Where private keys are kept, wrapped by the KEK (key-custody/). Default: the embedded
   * default KEK, a key file generated beside the data directory (`<dataDir>.kek`).
   */
  wrappedKeys?: WrappedKeys;
  /** Injected clock for expiry (tests); default the system clock. */
  clock?: () => Date;
  /** Fault injection for tests; never set in production. */
  hooks?: PublishHooks;
}

/** The per-tenant TUF repositories of the service. */
export class SigningRepository {
  readonly blobs: BlobStore;
  readonly keys: KeyStore;
  readonly wrappedKeys: WrappedKeys;
  readonly #ctx: RepoContext;
  readonly #ensured = new Set<string>();

  constructor(opts: SigningRepositoryOptions) {
    this.blobs = opts.blobs ?? new FsBlobStore(join(opts.dataDir, 'blobs'));
    this.wrappedKeys = opts.wrappedKeys ?? defaultWrappedKeys(opts.db as Kysely<Database>, opts.dataDir);
    this.keys = new KeyStore(this.wrappedKeys);
    this.#ctx = { db: opts.db as RepoDb, blobs: this.blobs, keys: this.keys, clock: opts.clock ?? (() => new Date()), hooks: opts.hooks ?? {} };
  }

  /**
   * Creates the tenant's repository (keys, root/targets/snapshot/timestamp version 1)
   * unless it exists. Safe to call from several processes at once. The tenant row
   * must exist (foreign key to tenants).
   */
  async ensureTenantRepo(tenantId: string): Promise<void> {
    assertTenantId(tenantId);
    if (this.#ensured.has(tenantId)) return;
    if (!(await repoExists(this.#ctx.db, tenantId))) await this.#create(tenantId);
    this.#ensured.add(tenantId);
  }

  async #create(tenantId: string): Promise<void> {
    const now = this.#ctx.clock();
    const k = this.keys;
    const rootKey = await k.loadOrCreate(tenantId, 'root');
    const online = {
      targets: await k.loadOrCreate(tenantId, 'targets'),
      snapshot: await k.loadOrCreate(tenantId, 'snapshot'),
      timestamp: await k.loadOrCreate(tenantId, 'timestamp'),
    };
    await this.#ctx.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('tuf_repositories')
        .values({ tenant_id: tenantId })
        .onConflict((oc) => oc.column('tenant_id').doNothing())
        .returning('tenant_id')
        .executeTakeFirst();
      if (!inserted) return; // another process created it meanwhile
      const root = buildRoot({ version: 1, now, rootKeys: [rootKey], rootThreshold: 1, online });
      signWith(root, [rootKey]);
      const targets = { version: 1, bytes: encodeMetadata(buildTargets(1, now, {}, online.targets)) };
      const snapshot = { version: 1, bytes: encodeMetadata(buildSnapshot(1, now, targets, online.snapshot)) };
      const timestamp = encodeMetadata(buildTimestamp(1, now, snapshot, online.timestamp));
      await insertMetadata(trx, tenantId, 'root', 1, encodeMetadata(root), tufExpires(now, 'root'));
      await insertMetadata(trx, tenantId, 'targets', 1, targets.bytes, tufExpires(now, 'targets'));
      await insertMetadata(trx, tenantId, 'snapshot', 1, snapshot.bytes, tufExpires(now, 'snapshot'));
      await insertMetadata(trx, tenantId, 'timestamp', 1, timestamp, tufExpires(now, 'timestamp'));
    });
  }

  /** Adds or replaces targets whose blobs are already stored; see PublishOptions for `immutable`. */
  async publishTargets(tenantId: string, entries: TargetEntry[], opts: PublishOptions = {}): Promise<PublishResult> {
    await this.ensureTenantRepo(tenantId);
    return publishTargets(this.#ctx, tenantId, assertTargetEntries(entries), opts);
  }

  /**
   * The whole publish flow for one payload: stream into the blob store (hashing),
   * then publish the target. Metadata is committed only after the blob is stored.
   */
  async publishTargetStream(
    tenantId: string,
    target: { path: string; custom?: Record<string, unknown> },
    source: AsyncIterable<Uint8Array> | Readable,
    opts: PublishOptions & BlobPutOptions = {},
  ): Promise<PublishResult & { digest: Digest; length: number; hashedPath: string }> {
    await this.ensureTenantRepo(tenantId);
    const path = assertTargetPath(target.path, 'path');
    const info = await this.blobs.put(source, opts);
    await this.#ctx.hooks.afterBlobStored?.(info);
    const entry: TargetEntry = { path, digest: info.digest, length: info.length, ...(target.custom ? { custom: target.custom } : {}) };
    const result = await this.publishTargets(tenantId, [entry], opts);
    return { ...result, digest: info.digest, length: info.length, hashedPath: hashedTargetPath(path, digestHex(info.digest)) };
  }

  /**
   * Takes targets no device needs any more out of the signed metadata, inside the caller's
   * transaction (retire.ts).
   */
  retireTargets(trx: Transaction<Database>, tenantId: string, paths: readonly string[]): Promise<RetireResult> {
    return retireTargets(this.#ctx, trx as unknown as RepoTx, assertTenantId(tenantId), paths);
  }

  /** Metadata bytes by file name (`timestamp.json`, `N.root.json`, `root.json` = newest root, ...). */
  getMetadata(tenantId: string, fileName: string): Promise<MetadataFile> {
    return getMetadataFile(this.#ctx, tenantId, fileName);
  }

  /** The current entry for `path` in the tenant's targets metadata, or undefined. */
  async getTargetInfo(tenantId: string, path: string): Promise<TargetInfo | undefined> {
    return (await this.listTargets(tenantId)).find((t) => t.path === path);
  }

  /** Every target of the newest targets metadata. */
  async listTargets(tenantId: string): Promise<TargetInfo[]> {
    assertTenantId(tenantId);
    const row = await latestMetadata(this.#ctx.db, tenantId, 'targets');
    if (!row) throw new SigningRepoError('REPO_NOT_FOUND', `tenant ${tenantId} has no signing repository`);
    return Object.values(decodeTargets(row.bytes).signed.targets).map((t) => {
      const hex = t.hashes['sha256'] ?? '';
      const custom = t.unrecognizedFields['custom'] as Record<string, unknown> | undefined;
      return { path: t.path, digest: digestFromHex(hex), length: t.length, hashedPath: hashedTargetPath(t.path, hex), ...(custom ? { custom } : {}) };
    });
  }

  /** Opens a repository file for any transport; see repo-files.ts. */
  openRepoFile(tenantId: string, repoPath: string, range?: ByteRangeRequest): Promise<RepoFile> {
    return openRepoFile(this.#ctx, tenantId, repoPath, range);
  }

  /** Re-signs roles of one tenant that near expiry (the refresh job; see expiry.ts). */
  refreshIfDue(tenantId: string, now: Date = this.#ctx.clock()): Promise<RefreshResult> {
    return refreshIfDue(this.#ctx, assertTenantId(tenantId), now);
  }

  /** refreshIfDue for every tenant repository: the body of the server's refresh job. */
  refreshAllDue(now: Date = this.#ctx.clock()): Promise<{ results: RefreshResult[]; failures: { tenantId: string; error: Error }[] }> {
    return refreshAllDue(this.#ctx, now);
  }

  /** The server-held root private key (PKCS#8 PEM) for offline custody; ROOT_KEY_UNAVAILABLE once deleted. */
  async exportRootKey(tenantId: string): Promise<string> {
    const key = await this.keys.load(assertTenantId(tenantId), 'root');
    if (!key) throw new SigningRepoError('ROOT_KEY_UNAVAILABLE', `the root key of tenant ${tenantId} is not on the server`);
    return key.pem;
  }

  /** Deletes the server-held root key (after export); returns false when it was already gone. */
  deleteRootKey(tenantId: string): Promise<boolean> {
    return this.keys.remove(assertTenantId(tenantId), 'root');
  }

  /**
   * Moves every repository whose root still names keys by `sha256:` + SPKI ids to TUF key
   * ids through a root rotation (key-id-upgrade.ts); the server runs it at start. Safe in
   * several processes at once, a no-op for repositories already on TUF key ids.
   */
  upgradeKeyIds(): Promise<KeyIdUpgradeResult> {
    return upgradeAllKeyIds(this.#ctx);
  }

  /** Every role key file of every tenant against its current root (the start-up key check, key-inspection.ts). */
  inspectRoleKeys(): Promise<RoleKeyReport[]> {
    return inspectAllRoleKeys(this.#ctx);
  }

  /** New online keys for those lost or wrong, through a root update the server-held root key signs; see key-inspection.ts. */
  rotateLostOnlineKeys(tenantId: string): Promise<{ roles: OnlineRole[]; rootVersion: number } | undefined> {
    return rotateLostOnlineKeys(this.#ctx, assertTenantId(tenantId));
  }

  /** Root N+1 signed by old and new root keys; see root-rotation.ts. */
  rotateRoot(tenantId: string, opts: RotateRootOptions = {}): Promise<{ version: number }> {
    return rotateRoot(this.#ctx, assertTenantId(tenantId), opts);
  }

  /**
   * Planned rotation of online keys with the root key on the server, inside the caller's
   * transaction (whose unit of work writes the audit row); see online-key-rotation.ts.
   */
  rotateOnlineKeys(trx: Transaction<Database>, tenantId: string, now: Date, roles: OnlineRole[]): Promise<OnlineKeyRotation> {
    return rotateOnlineKeys(this.#ctx, trx as unknown as RepoTx, assertTenantId(tenantId), now, roles);
  }

  /** Offline root custody, step 1: pending keys and the unsigned root N+1 to sign offline. */
  prepareOnlineKeyRotation(
    trx: Transaction<Database>,
    tenantId: string,
    now: Date,
    roles: OnlineRole[],
  ): Promise<OnlineKeyRotation & { unsignedRoot: Buffer }> {
    return prepareOnlineKeyRotation(this.#ctx, trx as unknown as RepoTx, assertTenantId(tenantId), now, roles);
  }

  /** The prepared rotation (ROTATION_NOT_FOUND without one). */
  pendingOnlineKeyRotation(tenantId: string): Promise<PendingOnlineKeyRotation> {
    return pendingOnlineKeyRotation(this.#ctx, assertTenantId(tenantId));
  }

  /** Offline root custody, step 2: the signed root N+1 checked and the pending keys activated. */
  acceptSignedRoot(trx: Transaction<Database>, tenantId: string, now: Date, signedRoot: unknown): Promise<OnlineKeyRotation> {
    return acceptSignedRoot(this.#ctx, trx as unknown as RepoTx, assertTenantId(tenantId), now, signedRoot);
  }

  /** Drops the prepared rotation and its pending keys. */
  cancelOnlineKeyRotation(trx: Transaction<Database>, tenantId: string): Promise<{ rootVersion: number; roles: OnlineRole[] }> {
    return cancelOnlineKeyRotation(this.#ctx, trx as unknown as RepoTx, assertTenantId(tenantId));
  }
}
