// Upload and download throughput of one artifact through the PostgreSQL blob store against the
// filesystem blob store, measured in the same run (docs/server.md "Blob store"): the ratio
// PostgreSQL/filesystem, target >= 0.5 each way, met / NOT MET computed from the measurement.
// Both go through the BlobStore interface as the artifact routes do: put streams a file in
// (hashing, durable before visible: fsync and rename, or committed chunks), get streams the
// blob out into a SHA-256 that checks the bytes.
//
// Runs against dist/ (`pnpm bench` builds first). PostgreSQL: SVC_BENCH_DATABASE_URL or
// SVC_TEST_DATABASE_URL (a fresh schema, dropped after); without one nothing is measured and
// the bench says so. Size: BENCH_BLOB_MIB (default 256). Runs of each store alternate, best of 3.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql } from 'kysely';
import { collectBlobGarbage, FsBlobStore, PgBlobStore } from '../dist/blobs/index.js';
import { migrateToLatest } from '../dist/store/migrate.js';
import { openStore } from '../dist/store/open.js';
import { benchMain, measured } from './measure.mjs';

const MIB = 1024 * 1024;
const sizeMiB = Number(process.env.BENCH_BLOB_MIB ?? 256);
const PG_URL = process.env.SVC_BENCH_DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL;
const RUNS = 3;
const TARGET = 0.5;
const verdict = (ok) => (ok ? 'met' : 'NOT MET');

/** Streams a blob out into a hash; the digest it read must be the one asked for. */
async function download(store, digest) {
  const { stream } = await store.get(digest);
  const hash = createHash('sha256');
  let bytes = 0;
  await pipeline(
    stream,
    new Writable({
      highWaterMark: MIB,
      write(chunk, _enc, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done();
      },
    }),
  );
  measured(`sha256:${hash.digest('hex')}` === digest && bytes === sizeMiB * MIB, `download of ${digest} returned other bytes`);
}

const mibPerS = (ms) => (sizeMiB * 1000) / ms;

await benchMain('blob store', async () => {
  if (!PG_URL) {
    console.log('blob store bench: no PostgreSQL (SVC_BENCH_DATABASE_URL / SVC_TEST_DATABASE_URL): not measured');
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-blobs-'));
  const schema = `bench_blobs_${randomBytes(4).toString('hex')}`;
  const store = await openStore({ databaseUrl: PG_URL, schema });
  try {
    await migrateToLatest(store);
    const src = join(dir, 'artifact.bin');
    const out = createWriteStream(src);
    const chunk = randomBytes(MIB); // incompressible; each MiB is made distinct below
    for (let i = 0; i < sizeMiB; i++) {
      chunk.writeUInt32BE(i, 0);
      if (!out.write(Buffer.from(chunk))) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
    for await (const _ of createReadStream(src)); // page cache warm for both
    console.log(`blob store bench: ${sizeMiB} MiB artifact, filesystem vs PostgreSQL (schema ${schema}), best of ${RUNS}`);

    const pg = new PgBlobStore(store.db);
    const best = { fs: { up: Infinity, down: Infinity }, pg: { up: Infinity, down: Infinity } };
    for (let run = 0; run < RUNS; run++) {
      // filesystem: a fresh store directory per run, as a fresh data directory would be
      const fs = new FsBlobStore(join(dir, `fs-${run}`));
      let t0 = performance.now();
      const fsInfo = await fs.put(createReadStream(src, { highWaterMark: MIB }));
      best.fs.up = Math.min(best.fs.up, performance.now() - t0);
      t0 = performance.now();
      await download(fs, fsInfo.digest);
      best.fs.down = Math.min(best.fs.down, performance.now() - t0);
      await rm(join(dir, `fs-${run}`), { recursive: true, force: true });

      // PostgreSQL: the previous run's blob is collected first, so every put stores it anew
      await collectBlobGarbage(store.db, { asOf: new Date(Date.now() + 24 * 3600_000) });
      t0 = performance.now();
      const pgInfo = await pg.put(createReadStream(src, { highWaterMark: MIB }));
      best.pg.up = Math.min(best.pg.up, performance.now() - t0);
      measured(pgInfo.digest === fsInfo.digest, `the stores disagree on the digest (${pgInfo.digest} vs ${fsInfo.digest})`);
      t0 = performance.now();
      await download(pg, pgInfo.digest);
      best.pg.down = Math.min(best.pg.down, performance.now() - t0);
    }
    const line = (label, ms) => console.log(`  ${label.padEnd(26)} ${(ms / 1000).toFixed(2).padStart(7)} s  ${mibPerS(ms).toFixed(1).padStart(7)} MiB/s`);
    line('filesystem upload (put)', best.fs.up);
    line('PostgreSQL upload (put)', best.pg.up);
    line('filesystem download (get)', best.fs.down);
    line('PostgreSQL download (get)', best.pg.down);
    const up = best.fs.up / best.pg.up;
    const down = best.fs.down / best.pg.down;
    console.log(`  ratio upload PostgreSQL/filesystem:   ${up.toFixed(2)}x the throughput (target >= ${TARGET}: ${verdict(up >= TARGET)})`);
    console.log(`  ratio download PostgreSQL/filesystem: ${down.toFixed(2)}x the throughput (target >= ${TARGET}: ${verdict(down >= TARGET)})`);
  } finally {
    await sql.raw(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).execute(store.db);
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
});
