import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Digest } from '@svc/release-core';
import { BlobError, blobStoreKind, blobStoreWarning, collectBlobGarbage, PgBlobStore, type BlobStore } from '../../src/blobs/index.js';
import { BLOB_REFERENCES, readChunkSliceBinary } from '../../src/blobs/pg-blob-queries.js';
import { openStore, postgresPoolOf } from '../../src/store/open.js';
import { ensureDefaultTenant } from '../../src/resources/tenants/queries.js';
import { availableDrivers, createTestStore, type TestStore } from '../helpers/store.js';
import { readAll } from '../fixtures/signing-repo.js';

/**
 * The database blob store (migration 0051) on both drivers: streamed put and get, ranges at
 * chunk boundaries, refused uploads leaving nothing, concurrent writers of one digest, and
 * the collector, which keeps every blob a committed row names.
 */
const CHUNK = 64 * 1024; // small chunks: boundaries are cheap to reach

describe('blob store selection (SVC_BLOB_STORE)', () => {
  it.each([
    [undefined, 'postgres://db/x', 'postgres'],
    [undefined, undefined, 'fs'],
    ['fs', 'postgres://db/x', 'fs'],
    ['postgres', undefined, 'postgres'],
  ] as const)('configured %s with database %s: %s', (configured, url, kind) => {
    expect(blobStoreKind(configured, url)).toBe(kind);
  });
  it('warns at start only when blobs on one disk meet a database several hosts share', () => {
    expect(blobStoreWarning('fs', 'postgres://db/x')).toMatch(/^blobs are on this host only \(SVC_BLOB_STORE=fs with PostgreSQL\)/);
    expect(blobStoreWarning('fs', undefined)).toBeUndefined();
    expect(blobStoreWarning('postgres', 'postgres://db/x')).toBeUndefined();
    expect(blobStoreWarning('postgres', undefined)).toBeUndefined();
  });
});

function sha(buf: Buffer): Digest {
  return `sha256:${createHash('sha256').update(buf).digest('hex')}`;
}

async function expectBlobError(p: Promise<unknown>, code: string): Promise<BlobError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(BlobError);
  expect((e as BlobError).code).toBe(code);
  return e as BlobError;
}

/** `bytes` as a source of uneven pieces (as an HTTP body arrives). */
function pieces(bytes: Buffer, size = 10_007): Readable {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return Readable.from(out);
}

describe.each(availableDrivers())('PgBlobStore on %s', (driver) => {
  let t: TestStore;
  let blobs: PgBlobStore;
  const payload = randomBytes(5 * CHUNK + 123);

  beforeAll(async () => {
    t = await createTestStore(driver);
    blobs = new PgBlobStore(t.store.db, { chunkBytes: CHUNK });
  });
  afterAll(async () => {
    await t?.dispose();
  });

  const counts = async (): Promise<Record<string, number>> => {
    const r = await sql<{ state: string; n: number }>`SELECT state, count(*)::int AS n FROM blobs GROUP BY state`.execute(t.store.db);
    const chunks = await sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_chunks`.execute(t.store.db);
    return { ...Object.fromEntries(r.rows.map((x) => [x.state, x.n])), chunks: chunks.rows[0]!.n };
  };
  const chunksOf = async (digest: string) =>
    (await sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_chunks c JOIN blobs b ON b.id = c.blob_id WHERE b.digest = ${digest}`.execute(t.store.db))
      .rows[0]!.n;

  it('stores a stream in chunks under its digest and reads it back whole', async () => {
    const info = await blobs.put(pieces(payload));
    expect(info).toEqual({ digest: sha(payload), length: payload.length });
    expect(await chunksOf(info.digest)).toBe(6);
    expect(await blobs.stat(info.digest)).toEqual(info);
    expect(await blobs.has(info.digest)).toBe(true);
    const whole = await blobs.get(info.digest);
    expect(whole.totalLength).toBe(payload.length);
    expect(whole.range).toBeUndefined();
    expect((await readAll(whole.stream)).equals(payload)).toBe(true);
    expect((await counts()).writing).toBeUndefined();
  });

  it('stores the empty blob and a blob of exactly one chunk', async () => {
    for (const bytes of [Buffer.alloc(0), randomBytes(CHUNK)]) {
      const info = await blobs.put(Readable.from([bytes]));
      expect(info).toEqual({ digest: sha(bytes), length: bytes.length });
      expect(await chunksOf(info.digest)).toBe(bytes.length === 0 ? 0 : 1);
      expect((await readAll((await blobs.get(info.digest)).stream)).equals(bytes)).toBe(true);
    }
  });

  it.each([
    ['the last byte of the first chunk', CHUNK - 1, CHUNK - 1],
    ['the first byte of the second chunk', CHUNK, CHUNK],
    ['across one boundary', CHUNK - 10, CHUNK + 9],
    ['exactly the second chunk', CHUNK, 2 * CHUNK - 1],
    ['across four boundaries', CHUNK - 1, 5 * CHUNK],
    ['the short last chunk', 5 * CHUNK, 5 * CHUNK + 122],
    ['from the start', 0, 0],
  ])('reads a range: %s', async (_name, start, end) => {
    const { digest } = await blobs.put(Readable.from([payload]));
    const r = await blobs.get(digest, { kind: 'from-to', start, end });
    expect(r.range).toEqual({ start, end });
    expect(r.totalLength).toBe(payload.length);
    expect((await readAll(r.stream)).equals(payload.subarray(start, end + 1))).toBe(true);
  });

  it('reads suffix and open ranges, clamps an end past the blob, refuses a start past it', async () => {
    const { digest } = await blobs.put(Readable.from([payload]));
    const tail = await blobs.get(digest, { kind: 'suffix', length: CHUNK + 124 });
    expect(tail.range).toEqual({ start: 4 * CHUNK - 1, end: payload.length - 1 });
    expect((await readAll(tail.stream)).equals(payload.subarray(4 * CHUNK - 1))).toBe(true);
    const from = await blobs.get(digest, { kind: 'from', start: 2 * CHUNK });
    expect((await readAll(from.stream)).equals(payload.subarray(2 * CHUNK))).toBe(true);
    const clamped = await blobs.get(digest, { kind: 'from-to', start: payload.length - 2, end: payload.length + 100 });
    expect(clamped.range).toEqual({ start: payload.length - 2, end: payload.length - 1 });
    await expectBlobError(blobs.get(digest, { kind: 'from', start: payload.length }), 'BLOB_RANGE_INVALID');
  });

  it('refuses bytes that do not hash to the expected digest: nothing visible, no chunk left', async () => {
    const before = await counts();
    const bytes = randomBytes(3 * CHUNK);
    const e = await expectBlobError(blobs.put(pieces(bytes), { expectedDigest: sha(Buffer.from('other')) }), 'BLOB_DIGEST_MISMATCH');
    expect(e.message).toContain(sha(bytes));
    expect(await blobs.has(sha(bytes))).toBe(false);
    await expectBlobError(blobs.get(sha(bytes)), 'BLOB_NOT_FOUND');
    expect(await counts()).toEqual(before);
  });

  it('refuses an upload over maxBytes, and cleans up a source that fails midway', async () => {
    const before = await counts();
    const big = randomBytes(2 * CHUNK + 1);
    await expectBlobError(blobs.put(pieces(big), { maxBytes: 2 * CHUNK }), 'BLOB_TOO_LARGE');
    expect(await blobs.has(sha(big))).toBe(false);
    async function* failing() {
      yield randomBytes(CHUNK * 2 + 5);
      throw new Error('client went away');
    }
    await expectBlobError(blobs.put(failing()), 'BLOB_WRITE_FAILED');
    const gone = new Readable({ read() {} });
    gone.destroy(new Error('client went away'));
    await expectBlobError(blobs.put(gone), 'BLOB_WRITE_FAILED');
    expect(await counts()).toEqual(before);
  });

  it('concurrent writers of the same bytes all succeed; one blob remains, whole', async () => {
    const bytes = randomBytes(4 * CHUNK + 7);
    // each writer on its own store handle (another server process, on PostgreSQL its own pool)
    const others = await Promise.all([0, 1, 2].map(() => createTestStore(driver, { migrate: false, schema: t.store.schema })));
    try {
      const writers = [blobs, ...others.map((o) => new PgBlobStore(o.store.db, { chunkBytes: CHUNK }))];
      const results = await Promise.all(writers.map((w) => w.put(pieces(bytes, 4096))));
      for (const r of results) expect(r).toEqual({ digest: sha(bytes), length: bytes.length });
      const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM blobs WHERE digest = ${sha(bytes)}`.execute(t.store.db);
      expect(rows.rows[0]!.n).toBe(1);
      expect(await chunksOf(sha(bytes))).toBe(5);
      expect((await counts()).writing).toBeUndefined();
      expect((await readAll((await blobs.get(sha(bytes))).stream)).equals(bytes)).toBe(true);
    } finally {
      for (const o of others) await o.store.close();
    }
  });

  it('refuses malformed digests and reports missing blobs', async () => {
    await expect(blobs.get('sha256:../../x')).rejects.toThrow(BlobError);
    const missing = sha(Buffer.from('never stored'));
    await expectBlobError(blobs.get(missing), 'BLOB_NOT_FOUND');
    expect(await blobs.stat(missing)).toBeUndefined();
    expect(await blobs.retain(missing)).toBeUndefined();
  });
});

describe.each(availableDrivers())('blob garbage collection on %s', (driver) => {
  let t: TestStore;
  let blobs: PgBlobStore;
  let tenant: string;
  const later = () => new Date(Date.now() + 2 * 3600_000); // past every lease the store gave

  beforeAll(async () => {
    t = await createTestStore(driver);
    blobs = new PgBlobStore(t.store.db, { chunkBytes: CHUNK });
    tenant = await ensureDefaultTenant(t.store.db);
  });
  afterAll(async () => {
    await t?.dispose();
  });

  /** A committed row of `table` naming `digest` (the minimum columns each table needs). */
  async function nameIn(table: string, digest: Digest, length: number): Promise<void> {
    const db = t.store.db;
    const now = new Date();
    const hex = digest.slice('sha256:'.length);
    if (table === 'artifacts') {
      await sql`INSERT INTO artifacts (tenant_id, name, version, kind, media_type, filename, digest, length, target, created_at, updated_at)
        VALUES (${tenant}, ${`a-${hex.slice(0, 8)}`}, '1.0.0', 'model', 'application/octet-stream', 'a.bin', ${digest}, ${length}, 'a', ${now}, ${now})`.execute(
        db,
      );
    } else if (table === 'tuf_target_files') {
      await sql`INSERT INTO tuf_repositories (tenant_id) VALUES (${tenant}) ON CONFLICT DO NOTHING`.execute(db);
      await sql`INSERT INTO tuf_target_files (tenant_id, path, sha256, length, targets_version) VALUES (${tenant}, ${`p/${hex}`}, ${hex}, ${length}, 2)`.execute(
        db,
      );
    } else if (table === 'member_deltas') {
      const other = (n: number) => `sha256:${createHash('sha256').update(`${hex}-${n}`).digest('hex')}`;
      await sql`INSERT INTO member_deltas (tenant_id, source_digest, target_digest, source_length, target_length, state, target_path, delta_digest, delta_length, created_at, updated_at)
        VALUES (${tenant}, ${other(1)}, ${other(2)}, 1, 1, 'ready', ${`deltas/${hex}.zst`}, ${digest}, ${length}, ${now}, ${now})`.execute(db);
    } else if (table === 'case_attachments' || table === 'case_submissions') {
      const c = await sql<{ id: string }>`INSERT INTO cases (tenant_id, kind, state, title, owner, aware_at, created_by, created_at, updated_at)
        VALUES (${tenant}, 'exploited_vulnerability', 'open', 'gc', 'o@example.test', ${now}, 'test', ${now}, ${now}) RETURNING id`.execute(db);
      const caseId = c.rows[0]!.id;
      if (table === 'case_attachments') {
        await sql`INSERT INTO case_attachments (tenant_id, case_id, filename, content_type, digest, length, added_by, added_at)
          VALUES (${tenant}, ${caseId}, 'x.bin', 'application/octet-stream', ${digest}, ${length}, 'test', ${now})`.execute(db);
      } else {
        await sql`INSERT INTO case_submissions (id, tenant_id, case_id, stage, document, digest, pdf_digest, pdf_length, created_by, created_at)
          VALUES (${randomUUID()}, ${tenant}, ${caseId}, 'early_warning', ${Buffer.from('{}')}, ${`sha256:${randomBytes(32).toString('hex')}`}, ${digest}, ${length}, 'test', ${now})`.execute(
          db,
        );
      }
    } else if (table === 'audit_events') {
      await sql`INSERT INTO audit_events (tenant_id, actor, credential, action, target, detail)
        VALUES (${tenant}, 'test', 'test', 'report.generate', 'report:x', ${JSON.stringify({ twin_sha256: digest })}::jsonb)`.execute(db);
    } else {
      throw new Error(`no row maker for ${table}`);
    }
  }

  it('every column of the schema that names a digest is a blob reference or known not to be one', async () => {
    // digests of things never put into the blob store: documents kept in their row, group
    // snapshots, release payloads and envelopes (their blob is named by tuf_target_files),
    // receipts' and device software's digests (what devices run), feeds and VEX documents;
    // a delta's source and target are member digests (their artifacts keep those blobs); the
    // source a device reports delivering from is the device's word
    const notBlobs = new Set([
      'member_deltas.source_digest',
      'member_deltas.target_digest',
      'receipt_deliveries.source_digest',
      'artifact_sboms.digest',
      'case_srp_packets.digest',
      'case_submissions.digest',
      'deployments.snapshot_digest',
      'device_groups.snapshot_digest',
      'releases.envelope_digest',
      'releases.payload_digest',
      'release_receipts.envelope_digest',
      'release_receipts.payload_digest',
      'vex_statements.document_digest',
      'vuln_device_software.digest',
      'vuln_imports.digest',
      'blobs.digest',
    ]);
    const named = new Set(BLOB_REFERENCES.map((r) => `${r.table}.${/^r\.(\w+)/.exec(r.digest)?.[1] ?? (r.digest.includes('sha256') ? 'sha256' : 'detail')}`));
    const cols = await sql<{ t: string; c: string }>`
      SELECT table_name AS t, column_name AS c FROM information_schema.columns
      WHERE table_schema = ${t.store.schema} AND (column_name LIKE '%digest%' OR column_name LIKE '%sha256%')`.execute(t.store.db);
    const unknown = cols.rows.map((r) => `${r.t}.${r.c}`).filter((n) => !notBlobs.has(n) && !named.has(n));
    expect(unknown).toEqual([]);
    expect([...named].sort()).toEqual(
      [
        'artifacts.digest',
        'audit_events.detail',
        'case_attachments.digest',
        'member_deltas.delta_digest',
        'case_submissions.pdf_digest',
        'tuf_target_files.sha256',
      ].sort(),
    );
  });

  it('never deletes a blob a committed row names; deletes the rest once their lease ended', async () => {
    const named: Digest[] = [];
    for (const ref of BLOB_REFERENCES) {
      const bytes = randomBytes(CHUNK + 17);
      const { digest } = await blobs.put(Readable.from([bytes]));
      await nameIn(ref.table, digest, bytes.length);
      named.push(digest);
    }
    const orphan = await blobs.put(Readable.from([randomBytes(2 * CHUNK)]));
    // inside the grace period: nothing goes, not even the orphan
    expect((await collectBlobGarbage(t.store.db)).deleted.map((d) => d.digest)).not.toContain(orphan.digest);
    expect(await blobs.has(orphan.digest)).toBe(true);
    // after it: only the orphan goes (with its chunks), in batches
    const r = await collectBlobGarbage(t.store.db, { asOf: later(), batch: 1 });
    expect(r.deleted).toEqual([{ digest: orphan.digest, length: 2 * CHUNK }]);
    expect(await blobs.has(orphan.digest)).toBe(false);
    for (const d of named) expect(await blobs.has(d)).toBe(true);
    const stray = await sql<{
      n: number;
    }>`SELECT count(*)::int AS n FROM blob_chunks c WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.id = c.blob_id)`.execute(t.store.db);
    expect(stray.rows[0]!.n).toBe(0);
  });

  it('keeps an upload that is still writing and collects one whose writer stopped', async () => {
    const bytes = randomBytes(3 * CHUNK);
    let release!: () => void;
    const parked = new Promise<void>((r) => (release = r));
    let wrote!: () => void;
    const halfway = new Promise<void>((r) => (wrote = r));
    async function* slow() {
      yield bytes.subarray(0, 2 * CHUNK);
      wrote();
      await parked;
      yield bytes.subarray(2 * CHUNK);
    }
    const put = blobs.put(slow());
    await halfway;
    // the collector runs now (the writer's lease holds) while the upload is between chunks
    expect((await collectBlobGarbage(t.store.db)).abandonedUploads).toBe(0);
    release();
    expect(await put).toEqual({ digest: sha(bytes), length: bytes.length });
    expect((await readAll((await blobs.get(sha(bytes))).stream)).equals(bytes)).toBe(true);

    // a writer gone for good: its row and chunks go once its lease ended, nothing else
    // one chunk per statement: the chunk is in the database while the source stalls
    const dead = new PgBlobStore(t.store.db, { chunkBytes: CHUNK, chunksPerWrite: 1 });
    const stuck = dead.put(
      (async function* () {
        yield randomBytes(CHUNK);
        await new Promise(() => undefined);
      })(),
    );
    void stuck;
    for (;;) {
      const w = await sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_chunks c JOIN blobs b ON b.id = c.blob_id WHERE b.state = 'writing'`.execute(
        t.store.db,
      );
      if (w.rows[0]!.n >= 1) break;
      await new Promise((r) => setImmediate(r));
    }
    // past the upload lease (15 min), within the grace a stored blob gets (1 h)
    const r = await collectBlobGarbage(t.store.db, { asOf: new Date(Date.now() + 20 * 60_000) });
    expect(r.abandonedUploads).toBe(1);
    expect(await blobs.has(sha(bytes))).toBe(true); // fresh lease from its put: kept
  });

  it('a put of bytes already stored renews their lease, so the collector keeps them for the row about to commit', async () => {
    const bytes = randomBytes(CHUNK / 2);
    const first = await blobs.put(Readable.from([bytes]));
    // the lease of the first put ends; a second put of the same bytes comes before the collector
    await sql`UPDATE blobs SET lease_until = now() - interval '1 minute' WHERE digest = ${first.digest}`.execute(t.store.db);
    await blobs.put(Readable.from([bytes]));
    expect((await collectBlobGarbage(t.store.db)).deleted.map((d) => d.digest)).not.toContain(first.digest);
    // retain (publishing an existing blob) does the same
    await sql`UPDATE blobs SET lease_until = now() - interval '1 minute' WHERE digest = ${first.digest}`.execute(t.store.db);
    expect(await blobs.retain(first.digest)).toEqual(first);
    expect((await collectBlobGarbage(t.store.db)).deleted.map((d) => d.digest)).not.toContain(first.digest);
    expect(await blobs.has(first.digest)).toBe(true);
  });
});

const pgUrl = process.env.SVC_TEST_DATABASE_URL;
if (!pgUrl && process.env.CI === 'true') throw new Error('blobs-pg: SVC_TEST_DATABASE_URL must be set in CI (PostgreSQL)');
if (!pgUrl) console.warn('blobs-pg: SVC_TEST_DATABASE_URL not set; the large-blob test needs PostgreSQL and is skipped');

describe.skipIf(!pgUrl)('PgBlobStore with a large blob on PostgreSQL', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore('postgres');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('streams a 128 MiB blob in and out with memory far below its size', async () => {
    const MIB = 1024 * 1024;
    const total = 128 * MIB;
    const blobs: BlobStore = new PgBlobStore(t.store.db);
    const { gc, retained } = await memoryProbe();
    gc();
    const base = retained();
    const baseRss = process.memoryUsage().rss;
    let peak = 0;
    let peakRss = 0;
    // sampled at progress points (every 8 MiB), after a collection: what is really held
    const sample = () => {
      gc();
      peak = Math.max(peak, retained() - base);
      peakRss = Math.max(peakRss, process.memoryUsage().rss - baseRss);
    };
    const hashIn = createHash('sha256');
    const seed = randomBytes(MIB);
    async function* generated() {
      for (let i = 0; i < total / (256 * 1024); i++) {
        const piece = Buffer.from(seed.subarray((i % 4) * 256 * 1024, ((i % 4) + 1) * 256 * 1024));
        piece.writeUInt32BE(i, 0); // no two chunks alike
        hashIn.update(piece);
        if (i % 32 === 0) sample();
        yield piece;
      }
    }
    const info = await blobs.put(generated());
    expect(info.length).toBe(total);
    expect(info.digest).toBe(`sha256:${hashIn.digest('hex')}`);

    const hashOut = createHash('sha256');
    let read = 0;
    let n = 0;
    for await (const chunk of (await blobs.get(info.digest)).stream as AsyncIterable<Buffer>) {
      hashOut.update(chunk);
      read += chunk.length;
      if (n++ % 8 === 0) sample();
    }
    expect(read).toBe(total);
    expect(`sha256:${hashOut.digest('hex')}`).toBe(info.digest);
    // a few 1 MiB chunks in flight and each pooled connection's receive buffer (a chunk
    // arrives as it is stored, 1 MiB): bounded by the pool, not by the blob
    expect(peak).toBeLessThan(40 * MIB);
    expect(peakRss).toBeLessThan(total / 2);
  }, 300_000);
});

describe.skipIf(!pgUrl)('PgBlobStore chunk transfer on PostgreSQL', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await createTestStore('postgres');
  });
  afterAll(async () => {
    await t?.dispose();
  });

  it('reads the same bytes in COPY binary format as in base64 text, whole and in ranges, and reports a chunk deleted meanwhile', async () => {
    expect(postgresPoolOf(t.store.db)).toBeDefined();
    const binary = new PgBlobStore(t.store.db, { chunkBytes: CHUNK });
    const text = new PgBlobStore(t.store.db, { chunkBytes: CHUNK, pool: null });
    // every byte value, invalid UTF-8 sequences included, then random bytes
    const everyByte = Buffer.alloc(CHUNK + 300);
    for (let i = 0; i < everyByte.length; i++) everyByte[i] = i % 256;
    const bytes = Buffer.concat([everyByte, Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0, 0]), randomBytes(2 * CHUNK + 17)]);
    const { digest } = await binary.put(pieces(bytes));
    const ranges: [number, number][] = [
      [0, bytes.length - 1],
      [0, 0],
      [CHUNK - 3, CHUNK + 3],
      [CHUNK + 290, 3 * CHUNK],
      [bytes.length - 1, bytes.length - 1],
    ];
    for (const [start, end] of ranges) {
      const want = bytes.subarray(start, end + 1);
      for (const store of [binary, text]) {
        const got = await readAll((await store.get(digest, { kind: 'from-to', start, end })).stream);
        expect(got.equals(want), `${start}-${end}`).toBe(true);
      }
    }
    await sql`DELETE FROM blob_chunks WHERE idx = 2 AND blob_id = (SELECT id FROM blobs WHERE digest = ${digest})`.execute(t.store.db);
    for (const store of [binary, text]) {
      const e = await readAll((await store.get(digest)).stream).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(BlobError);
      expect((e as BlobError).code).toBe('BLOB_NOT_FOUND');
      expect((e as BlobError).message).toContain('chunk 2 is missing');
    }
  });

  it('a COPY read the database refuses rejects with its error and leaves the connection usable; malformed keys are refused before any SQL', async () => {
    const pool = new pg.Pool({ connectionString: pgUrl!, max: 1, options: '-c search_path=no_such_schema_for_blobs' });
    try {
      const e = await readChunkSliceBinary(pool, '1', 0, 0, 10).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect((e as { code?: string }).code).toBe('42P01'); // blob_chunks does not exist there
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
      expect(pool.totalCount).toBe(1);
      await expect(readChunkSliceBinary(pool, '1; DROP TABLE blobs', 0, 0, 10)).rejects.toThrow(/id must be a non-negative integer/);
      await expect(readChunkSliceBinary(pool, '1', 0, -1, 10)).rejects.toThrow(/from must be a non-negative integer/);
    } finally {
      await pool.end();
    }
  });

  it('commits chunks without waiting for the WAL flush only within their own statement: the pooled connection keeps synchronous_commit on', async () => {
    const single = await openStore({ databaseUrl: pgUrl!, schema: t.store.schema, poolSize: 1 });
    try {
      const blobs = new PgBlobStore(single.db, { chunkBytes: CHUNK });
      const bytes = randomBytes(3 * CHUNK + 5);
      const info = await blobs.put(pieces(bytes));
      expect(info).toEqual({ digest: sha(bytes), length: bytes.length });
      const r = await sql<{ v: string }>`SELECT current_setting('synchronous_commit') AS v`.execute(single.db);
      expect(r.rows[0]!.v).toBe('on');
      expect((await readAll((await blobs.get(info.digest)).stream)).equals(bytes)).toBe(true);
    } finally {
      await single.close();
    }
  });
});

/** A forced collection and the bytes the process holds (V8 heap plus ArrayBuffers). */
async function memoryProbe(): Promise<{ gc: () => void; retained: () => number }> {
  const v8 = await import('node:v8');
  const vm = await import('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  return {
    gc,
    retained: () => {
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    },
  };
}
