import type { Kysely, Transaction } from 'kysely';
import type { TufRole } from './expiry.js';
import type { SigningRepoTables } from './tables.js';

/** The slice of the server database the signing repository uses. */
export type RepoDb = Kysely<SigningRepoTables>;
export type RepoTx = Transaction<SigningRepoTables>;

export interface MetadataRow {
  version: number;
  bytes: Buffer;
}

/** pg returns Buffer, PGlite Uint8Array: one shape for the rest of the code. */
function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Locks the tenant's repository row until the transaction ends, so publishes,
 * refreshes and rotations of one tenant serialize across server processes.
 * Returns false when the tenant has no repository.
 */
export async function lockRepo(trx: RepoTx, tenantId: string): Promise<boolean> {
  const row = await trx.selectFrom('tuf_repositories').select('tenant_id').where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst();
  return row !== undefined;
}

export async function repoExists(db: RepoDb, tenantId: string): Promise<boolean> {
  const row = await db.selectFrom('tuf_repositories').select('tenant_id').where('tenant_id', '=', tenantId).executeTakeFirst();
  return row !== undefined;
}

export async function latestMetadata(db: RepoDb | RepoTx, tenantId: string, role: TufRole): Promise<MetadataRow | undefined> {
  const row = await db
    .selectFrom('tuf_metadata')
    .select(['version', 'bytes'])
    .where('tenant_id', '=', tenantId)
    .where('role', '=', role)
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && { version: row.version, bytes: toBuffer(row.bytes) };
}

export async function metadataByVersion(db: RepoDb, tenantId: string, role: TufRole, version: number): Promise<MetadataRow | undefined> {
  const row = await db
    .selectFrom('tuf_metadata')
    .select(['version', 'bytes'])
    .where('tenant_id', '=', tenantId)
    .where('role', '=', role)
    .where('version', '=', version)
    .executeTakeFirst();
  return row && { version: row.version, bytes: toBuffer(row.bytes) };
}

export async function insertMetadata(trx: RepoTx, tenantId: string, role: TufRole, version: number, bytes: Buffer, expires: string): Promise<void> {
  await trx.insertInto('tuf_metadata').values({ tenant_id: tenantId, role, version, bytes, expires_at: expires }).execute();
}

export async function touchRepo(trx: RepoTx, tenantId: string): Promise<void> {
  await trx.updateTable('tuf_repositories').set({ updated_at: new Date() }).where('tenant_id', '=', tenantId).execute();
}

export interface TargetFileRow {
  length: number;
  mediaType: string | null;
}

export async function findTargetFile(db: RepoDb, tenantId: string, path: string, sha256: string): Promise<TargetFileRow | undefined> {
  const row = await db
    .selectFrom('tuf_target_files')
    .select(['length', 'media_type'])
    .where('tenant_id', '=', tenantId)
    .where('path', '=', path)
    .where('sha256', '=', sha256)
    .executeTakeFirst();
  return row && { length: Number(row.length), mediaType: row.media_type };
}

export async function listRepoTenants(db: RepoDb): Promise<string[]> {
  const rows = await db.selectFrom('tuf_repositories').select('tenant_id').orderBy('tenant_id').execute();
  return rows.map((r) => r.tenant_id);
}

export interface PendingRotationRow {
  rootVersion: number;
  roles: ('targets' | 'snapshot' | 'timestamp')[];
  unsignedRoot: Buffer;
  createdAt: Date;
}

export async function getPendingRotation(db: RepoDb | RepoTx, tenantId: string): Promise<PendingRotationRow | undefined> {
  const row = await db
    .selectFrom('tuf_pending_rotations')
    .select(['root_version', 'roles', 'unsigned_root', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  return row && { rootVersion: row.root_version, roles: row.roles, unsignedRoot: toBuffer(row.unsigned_root), createdAt: new Date(row.created_at) };
}

export async function insertPendingRotation(
  trx: RepoTx,
  tenantId: string,
  p: { rootVersion: number; roles: ('targets' | 'snapshot' | 'timestamp')[]; unsignedRoot: Buffer },
): Promise<void> {
  await trx
    .insertInto('tuf_pending_rotations')
    .values({ tenant_id: tenantId, root_version: p.rootVersion, roles: p.roles, unsigned_root: p.unsignedRoot })
    .execute();
}

export async function deletePendingRotation(trx: RepoTx, tenantId: string): Promise<boolean> {
  const r = await trx.deleteFrom('tuf_pending_rotations').where('tenant_id', '=', tenantId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
