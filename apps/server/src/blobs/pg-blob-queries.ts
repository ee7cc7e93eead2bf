import { sql, type Kysely } from 'kysely';
import type pg from 'pg';

/**
 * The SQL of the PostgreSQL blob store (tables of migration 0051): the only file that speaks
 * SQL about `blobs` and `blob_chunks`. Same statements on PostgreSQL and PGlite.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema with the 0051 tables
export type BlobDb = Kysely<any>;

export interface StoredBlobRow {
  id: string;
  length: number;
  chunkSize: number;
}

/** `PGCOPY\n\377\r\n\0`: the signature that opens COPY's binary format. */
const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** The signature, no flags, no header extension. */
const COPY_HEADER = Buffer.concat([COPY_SIGNATURE, Buffer.alloc(8)]);
/** A field count of -1: the end of COPY's binary data. */
const COPY_TRAILER = Buffer.from([0xff, 0xff]);
const INTEGER = /^(0|[1-9][0-9]{0,18})$/;

/**
 * COPY takes no parameters, so the integers a COPY statement names are part of its text: each
 * must be a non-negative integer, checked here before the text is built.
 */
function checkIntegers(fn: string, values: Readonly<Record<string, string | number>>): void {
  for (const [name, value] of Object.entries(values)) {
    if (!INTEGER.test(String(value))) throw new Error(`${fn}: ${name} must be a non-negative integer, got ${JSON.stringify(String(value))}`);
  }
}

const interval = (ms: number) => sql`make_interval(secs => ${ms / 1000})`;

/** A new `writing` row leased for `leaseMs`; its id keys the chunks the upload writes. */
export async function beginUpload(db: BlobDb, chunkSize: number, leaseMs: number): Promise<string> {
  const r = await sql<{ id: string }>`
    INSERT INTO blobs (state, chunk_size, lease_until) VALUES ('writing', ${chunkSize}, now() + ${interval(leaseMs)})
    RETURNING id::text AS id`.execute(db);
  return r.rows[0]!.id;
}

/** Renews an upload's lease; false when its row is gone (collected after the lease lapsed). */
export async function renewUpload(db: BlobDb, id: string, leaseMs: number): Promise<boolean> {
  const r = await sql`UPDATE blobs SET lease_until = now() + ${interval(leaseMs)} WHERE id = ${id} AND state = 'writing'`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/**
 * Inserts one chunk of a `writing` upload, `bytes` sent as a binary parameter (node-postgres
 * sends a Buffer as binary; no hex or escape text). The statement commits on its own without
 * waiting for its WAL flush (`synchronous_commit` off for this transaction only): the commit
 * that makes the blob visible (completeUpload) is synchronous and flushes the WAL up to its own
 * record, which lies after every chunk's, so a visible blob is as durable as before. A crash
 * before that can lose only chunks of a `writing` row no reader sees; the upload failed and is
 * sent again, and the collector removes the row once its lease lapses.
 */
export async function insertChunk(db: BlobDb, id: string, idx: number, bytes: Uint8Array): Promise<void> {
  await sql`
    INSERT INTO blob_chunks (blob_id, idx, bytes)
    SELECT ${id}::bigint, ${idx}::integer, ${bytes}::bytea FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`.execute(db);
}

/**
 * Same as insertChunk for consecutive chunks `firstIdx`, `firstIdx + 1`, ... on a PostgreSQL
 * pool, in one statement: `COPY blob_chunks FROM STDIN (FORMAT binary)`, each chunk's bytes
 * sent as they are (no parameter encoding, no Bind of a megabyte per row), committed without
 * waiting for the WAL flush as insertChunk. One statement and commit for several chunks: on the
 * 2-core bench machine 64 MiB went in at 6.7-12.6 MiB/s as one INSERT per 1 MiB chunk, 10.7-16.1
 * MiB/s as one COPY per chunk and 23-27 MiB/s as one COPY per 4 chunks (one connection).
 * `set_config(..., true)` and the COPY run in the one implicit transaction of a simple query,
 * so a failure rolls both back and leaves the connection idle.
 */
export async function insertChunksBinary(pool: pg.Pool, id: string, firstIdx: number, chunks: readonly Buffer[]): Promise<void> {
  checkIntegers('insertChunksBinary', { id });
  const blobId = BigInt(id);
  const input: Buffer[] = [COPY_HEADER];
  chunks.forEach((bytes, i) => {
    const row = Buffer.allocUnsafe(2 + 4 + 8 + 4 + 4 + 4);
    let at = row.writeInt16BE(3, 0);
    at = row.writeInt32BE(8, at);
    at = row.writeBigInt64BE(blobId, at);
    at = row.writeInt32BE(4, at);
    at = row.writeInt32BE(firstIdx + i, at);
    row.writeInt32BE(bytes.byteLength, at);
    input.push(row, bytes);
  });
  input.push(COPY_TRAILER);
  const text = `SELECT set_config('synchronous_commit', 'off', true); COPY blob_chunks (blob_id, idx, bytes) FROM STDIN (FORMAT binary)`;
  await runCopy(pool, text, input);
}

/** Removes an upload's row and (cascading) its chunks. */
export async function dropUpload(db: BlobDb, id: string): Promise<void> {
  await sql`DELETE FROM blobs WHERE id = ${id} AND state = 'writing'`.execute(db);
}

/**
 * Extends a stored blob's lease to at least `graceMs` from now and returns its length, or
 * undefined when no stored blob has that digest. A blob whose lease this extends is safe from
 * the collector until then even though no row names it yet.
 */
export async function retainStored(db: BlobDb, digest: string, graceMs: number): Promise<number | undefined> {
  const r = await sql<{ length: string }>`
    UPDATE blobs SET lease_until = greatest(lease_until, now() + ${interval(graceMs)})
    WHERE digest = ${digest} AND state = 'stored'
    RETURNING length::text AS length`.execute(db);
  const row = r.rows[0];
  return row === undefined ? undefined : Number(row.length);
}

/**
 * Makes an upload the stored blob of `digest` in one statement. False when that digest is
 * already stored (a concurrent upload of the same bytes finished first: the unique digest
 * refuses the second). Throws when the upload's own row is gone.
 */
export async function completeUpload(db: BlobDb, id: string, digest: string, length: number, graceMs: number): Promise<boolean> {
  try {
    const r = await sql`
      UPDATE blobs SET state = 'stored', digest = ${digest}, length = ${length}, stored_at = now(), lease_until = now() + ${interval(graceMs)}
      WHERE id = ${id} AND state = 'writing'`.execute(db);
    if (Number(r.numAffectedRows ?? 0) !== 1) throw new Error('the upload was collected before it completed (its lease lapsed)');
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === '23505') return false;
    throw e;
  }
}

export async function findStored(db: BlobDb, digest: string): Promise<StoredBlobRow | undefined> {
  const r = await sql<{ id: string; length: string; chunk_size: number }>`
    SELECT id::text AS id, length::text AS length, chunk_size FROM blobs WHERE digest = ${digest} AND state = 'stored'`.execute(db);
  const row = r.rows[0];
  return row === undefined ? undefined : { id: row.id, length: Number(row.length), chunkSize: row.chunk_size };
}

/**
 * The SQL for `count` bytes of a chunk's `bytes` from byte `from` (0-based integers, checked by
 * the callers). A read of a whole chunk (every read of a download but the first and last of a
 * range) names the column itself: PostgreSQL 15 sends `substring(bytes ...)` of an out-of-line
 * value about three times slower than the value (64 x 1 MiB chunks through COPY binary: 4.2-4.7 s
 * against 1.4-1.5 s, measured with psql), and `octet_length` reads only the TOAST pointer.
 */
function sliceOf(from: number, count: number): string {
  return `CASE WHEN ${from} = 0 AND octet_length(bytes) <= ${count} THEN bytes ELSE substring(bytes FROM ${from + 1} FOR ${count}) END`;
}

/**
 * `count` bytes of chunk `idx` from byte `from` (0-based); undefined when the chunk is gone.
 * Sent as base64 text rather than as bytea: results arrive in text format, where bytea is hex
 * (twice the bytes); base64 is a third more and decodes faster (about 30% less time per chunk
 * measured on PostgreSQL 15 with node-postgres).
 */
export async function readChunkSlice(db: BlobDb, id: string, idx: number, from: number, count: number): Promise<Buffer | undefined> {
  const r = await sql<{ b64: string }>`
    SELECT encode(CASE WHEN ${from}::integer = 0 AND octet_length(bytes) <= ${count}::integer THEN bytes ELSE substring(bytes FROM ${from + 1} FOR ${count}) END, 'base64') AS b64 FROM blob_chunks WHERE blob_id = ${id} AND idx = ${idx}`.execute(
    db,
  );
  const row = r.rows[0];
  return row === undefined ? undefined : Buffer.from(row.b64, 'base64');
}

/**
 * Same as readChunkSlice on a PostgreSQL pool, without text: `COPY ... TO STDOUT (FORMAT
 * binary)` sends the bytea as it is stored, and this process copies it once out of the
 * protocol buffer. node-postgres's `binary: true` result format cannot serve: it decodes every
 * field as UTF-8 before handing it over, which mangles bytes that are not UTF-8. COPY takes no
 * parameters, so the (checked) integers are part of the text.
 */
export async function readChunkSliceBinary(pool: pg.Pool, id: string, idx: number, from: number, count: number): Promise<Buffer | undefined> {
  checkIntegers('readChunkSliceBinary', { id, idx, from, count });
  const text = `COPY (SELECT ${sliceOf(from, count)} FROM blob_chunks WHERE blob_id = ${id} AND idx = ${idx}) TO STDOUT (FORMAT binary)`;
  return parseCopyField(await runCopy(pool, text, []));
}

/**
 * Whole chunks `firstIdx`..`lastIdx` of blob row `id` in order, in one `COPY ... TO STDOUT
 * (FORMAT binary)` statement: one statement for several chunks, as for writes, and each chunk
 * copied once out of the protocol buffer into its own Buffer as the rows arrive. Fewer rows
 * than asked when chunks are gone (the caller checks).
 */
export async function readWholeChunksBinary(pool: pg.Pool, id: string, firstIdx: number, lastIdx: number): Promise<Buffer[]> {
  checkIntegers('readWholeChunksBinary', { id, firstIdx, lastIdx });
  const text = `COPY (SELECT bytes FROM blob_chunks WHERE blob_id = ${id} AND idx BETWEEN ${firstIdx} AND ${lastIdx} ORDER BY idx) TO STDOUT (FORMAT binary)`;
  const rows = new CopyBinaryRows();
  await runCopy(pool, text, [], (chunk) => rows.feed(chunk));
  if (!rows.complete) throw new Error('COPY binary output: no trailer');
  return rows.rows.map((r) => {
    if (r === null) throw new Error('COPY binary output: a NULL chunk');
    return r;
  });
}

/**
 * COPY's binary format read as it arrives, for rows of one field: the header, then per row a
 * field count (1), the field's length and bytes, then the trailer (-1). Each field is copied
 * once, straight into a Buffer of its length, whatever the message boundaries.
 */
class CopyBinaryRows {
  readonly rows: (Buffer | null)[] = [];
  readonly #fixed = Buffer.alloc(COPY_HEADER.length);
  #have = 0;
  #want = COPY_HEADER.length;
  #state: 'header' | 'extension' | 'count' | 'length' | 'field' | 'end' = 'header';
  #skip = 0;
  #field: Buffer | undefined;
  #filled = 0;

  get complete(): boolean {
    return this.#state === 'end';
  }

  feed(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#state === 'end') throw new Error('COPY binary output: bytes after the trailer');
      if (this.#state === 'extension') {
        const n = Math.min(this.#skip, chunk.length - at);
        at += n;
        this.#skip -= n;
        if (this.#skip === 0) this.#expect('count', 2);
        continue;
      }
      if (this.#state === 'field') {
        const field = this.#field!;
        const n = Math.min(field.length - this.#filled, chunk.length - at);
        chunk.copy(field, this.#filled, at, at + n);
        at += n;
        this.#filled += n;
        if (this.#filled === field.length) this.#row(field);
        continue;
      }
      const n = Math.min(this.#want - this.#have, chunk.length - at);
      chunk.copy(this.#fixed, this.#have, at, at + n);
      at += n;
      this.#have += n;
      if (this.#have === this.#want) this.#parsed();
    }
  }

  #expect(state: 'count' | 'length', bytes: number): void {
    this.#state = state;
    this.#want = bytes;
    this.#have = 0;
  }

  #row(field: Buffer | null): void {
    this.rows.push(field);
    this.#field = undefined;
    this.#expect('count', 2);
  }

  #parsed(): void {
    const b = this.#fixed;
    if (this.#state === 'header') {
      if (!b.subarray(0, COPY_SIGNATURE.length).equals(COPY_SIGNATURE)) throw new Error('COPY binary output: no binary COPY header');
      this.#skip = b.readUInt32BE(COPY_SIGNATURE.length + 4);
      if (this.#skip > 0) this.#state = 'extension';
      else this.#expect('count', 2);
    } else if (this.#state === 'count') {
      const fields = b.readInt16BE(0);
      if (fields === -1) this.#state = 'end';
      else if (fields !== 1) throw new Error(`COPY binary output: a row of ${fields} fields, expected 1`);
      else this.#expect('length', 4);
    } else {
      const length = b.readInt32BE(0);
      if (length === -1) this.#row(null);
      else if (length === 0) this.#row(Buffer.alloc(0));
      else {
        this.#field = Buffer.allocUnsafe(length);
        this.#filled = 0;
        this.#state = 'field';
      }
    }
  }
}

/**
 * Runs a simple query holding one COPY on a pooled connection: `input` is sent as the data of
 * a COPY FROM STDIN; the data of a COPY TO STDOUT is returned, or given to `sink` as it arrives
 * (a view of node-postgres's read buffer, valid during the call only).
 */
async function runCopy(pool: pg.Pool, text: string, input: readonly Buffer[], sink?: (chunk: Buffer) => void): Promise<Buffer[]> {
  const client = await pool.connect();
  let parts: Buffer[];
  try {
    parts = await new Promise<Buffer[]>((resolve, reject) => client.query(new CopyStatement(text, input, resolve, reject, sink)));
  } catch (e) {
    // an error the database reported leaves the connection usable; anything else (a broken socket) does not
    client.release(isDatabaseError(e) ? undefined : (e as Error));
    throw e;
  }
  client.release();
  return parts;
}

/**
 * A simple query with a COPY for node-postgres (its Submittable interface, as used by
 * pg-cursor): sends `input` as CopyData once the database asks for it (COPY FROM STDIN),
 * collects the CopyData messages it sends (COPY TO STDOUT), each copied at once since
 * node-postgres reuses its read buffer, and settles on ReadyForQuery or on an error (after
 * which node-postgres routes nothing more to it).
 */
class CopyStatement implements pg.Submittable {
  readonly #parts: Buffer[] = [];
  #error: Error | undefined;
  #settled = false;
  constructor(
    readonly text: string,
    readonly input: readonly Buffer[],
    readonly resolve: (parts: Buffer[]) => void,
    readonly reject: (e: Error) => void,
    readonly sink?: (chunk: Buffer) => void,
  ) {}
  submit(connection: pg.Connection): void {
    (connection as unknown as { query(text: string): void }).query(this.text);
  }
  handleCopyInResponse(connection: pg.Connection): void {
    const c = connection as unknown as { sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void };
    for (const part of this.input) c.sendCopyFromChunk(part);
    c.endCopyFrom();
  }
  handleCopyData(msg: { chunk: Buffer }): void {
    if (this.sink === undefined) {
      this.#parts.push(Buffer.from(msg.chunk));
      return;
    }
    if (this.#error !== undefined) return;
    try {
      this.sink(msg.chunk);
    } catch (e) {
      // kept for ReadyForQuery: the statement's messages still arrive and are skipped
      this.#error = e as Error;
    }
  }
  handleError(error: Error): void {
    this.#error ??= error;
    // node-postgres stops routing messages to a statement once it failed (no ReadyForQuery
    // follows here); a statement sent next on the client waits for the connection to be ready
    this.#settle();
  }
  handleReadyForQuery(): void {
    this.#settle();
  }
  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  #settle(): void {
    if (this.#settled) return;
    this.#settled = true;
    if (this.#error !== undefined) this.reject(this.#error);
    else this.resolve(this.#parts);
  }
}

/** An ErrorResponse of the database (node-postgres's DatabaseError carries its severity), not a failure of the connection. */
function isDatabaseError(e: unknown): boolean {
  return typeof e === 'object' && e !== null && typeof (e as { severity?: unknown }).severity === 'string';
}

/** The one bytea field of COPY's binary output (at most one row); undefined when there is no row or it is NULL. */
function parseCopyField(parts: Buffer[]): Buffer | undefined {
  const bad = (why: string) => new Error(`COPY binary output: ${why}`);
  const headerBytes = COPY_SIGNATURE.length + 8;
  let b = parts[0] ?? Buffer.alloc(0);
  if (b.length < headerBytes + 2 && parts.length > 1) b = Buffer.concat(parts);
  if (b.length < headerBytes + 2 || !b.subarray(0, COPY_SIGNATURE.length).equals(COPY_SIGNATURE)) throw bad('no binary COPY header');
  const start = headerBytes + b.readUInt32BE(COPY_SIGNATURE.length + 4);
  if (b.length < start + 2 && parts.length > 1) b = Buffer.concat(parts);
  const fields = b.readInt16BE(start);
  if (fields === -1) return undefined;
  if (fields !== 1) throw bad(`a row of ${fields} fields, expected 1`);
  const length = b.readInt32BE(start + 2);
  if (length === -1) return undefined;
  const end = start + 6 + length;
  // the field and the trailer (-1) are usually in separate messages
  if (b.length < end && parts.length > 1) b = Buffer.concat(parts);
  const total = parts.reduce((n, p) => n + p.length, 0);
  if (b.length < end || total !== end + 2) throw bad(`${total} bytes, expected one field of ${length} bytes`);
  return b.subarray(start + 6, end);
}

/**
 * Every column of a committed row that names a blob, as `table` and a SQL expression over
 * that table's row `r` giving the digest (`sha256:<hex>`). The collector keeps any blob one
 * of them names; a table that starts naming blobs must be added here (a test compares this
 * list with every digest-like column of the schema).
 */
export const BLOB_REFERENCES: readonly { table: string; digest: string; where?: string }[] = [
  { table: 'artifacts', digest: 'r.digest' },
  // TUF targets (artifacts and release envelopes), every version ever published
  { table: 'tuf_target_files', digest: `'sha256:' || r.sha256` },
  // a delta's blob while its row exists (retired deltas lose their row and TUF target together)
  { table: 'member_deltas', digest: 'r.delta_digest' },
  { table: 'case_attachments', digest: 'r.digest' },
  { table: 'case_submissions', digest: 'r.pdf_digest' },
  // the JSON twin of a PDF report, named by the report's audit row
  { table: 'audit_events', digest: `r.detail->>'twin_sha256'`, where: `r.action = 'report.generate'` },
];

/** `NOT EXISTS` over every reference: true for a blob `b` no committed row names. */
function unreferenced() {
  return sql.join(
    BLOB_REFERENCES.map((ref) => {
      // tuf_target_files keeps the bare hex: compare with the digest's hex so its index serves
      const match = ref.table === 'tuf_target_files' ? `r.sha256 = substr(b.digest, 8)` : `${ref.digest} = b.digest`;
      return sql.raw(`NOT EXISTS (SELECT 1 FROM ${ref.table} r WHERE ${match}${ref.where ? ` AND ${ref.where}` : ''})`);
    }),
    sql` AND `,
  );
}

/** Deletes uploads whose writer stopped renewing before `asOf` (default: the database's now). */
export async function deleteAbandonedUploads(db: BlobDb, asOf: Date | undefined): Promise<number> {
  const r = await sql`DELETE FROM blobs WHERE state = 'writing' AND lease_until < coalesce(${asOf ?? null}::timestamptz, now())`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * Deletes up to `limit` stored blobs whose lease ended before `asOf` and that no committed row
 * names. The outer WHERE repeats every condition: a put or `retain` that renews a lease while
 * this runs holds the row, and PostgreSQL re-checks the renewed row, which then stays.
 */
export async function deleteUnreferencedBlobs(db: BlobDb, asOf: Date | undefined, limit: number): Promise<{ digest: string; length: number }[]> {
  const at = sql`coalesce(${asOf ?? null}::timestamptz, now())`;
  const r = await sql<{ digest: string; length: string }>`
    DELETE FROM blobs b
    WHERE b.id IN (
        SELECT b.id FROM blobs b WHERE b.state = 'stored' AND b.lease_until < ${at} AND ${unreferenced()} ORDER BY b.id LIMIT ${limit}
      )
      AND b.state = 'stored' AND b.lease_until < ${at} AND ${unreferenced()}
    RETURNING b.digest, b.length::text AS length`.execute(db);
  return r.rows.map((row) => ({ digest: row.digest, length: Number(row.length) }));
}
