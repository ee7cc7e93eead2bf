// BlobStore.put throughput against `cp` of the same file, as a ratio (docs/development.md:
// speed targets are ratios against a baseline measured in the same run, never timed tests).
// Runs against dist/ (`pnpm bench` builds first). Size: BENCH_UPLOAD_MIB (default 256).
//
// put streams through SHA-256 and fsyncs before the rename (durable before visible); plain
// `cp` does neither, so the second baseline is `cp` followed by `sync <file>`.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { FsBlobStore } from '../dist/blobs/index.js';

const MIB = 1024 * 1024;
const sizeMiB = Number(process.env.BENCH_UPLOAD_MIB ?? 256);
const RUNS = 3;

function run(cmd, args, stdout = 'inherit') {
  const r = spawnSync(cmd, args, { stdio: ['ignore', stdout, 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? r.status})`);
}

async function best(label, fn) {
  let bestMs = Infinity;
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    bestMs = Math.min(bestMs, Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log(`${label.padEnd(28)} ${(bestMs / 1000).toFixed(3)} s  ${((sizeMiB * 1000) / bestMs).toFixed(0)} MiB/s (best of ${RUNS})`);
  return bestMs;
}

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-upload-'));
try {
  const src = join(dir, 'source.bin');
  const out = createWriteStream(src);
  const chunk = randomBytes(MIB); // incompressible; repeated is fine for hashing and copying
  for (let i = 0; i < sizeMiB; i++) if (!out.write(chunk)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
  run('cat', [src], 'ignore'); // warm the page cache equally for every contender
  console.log(`upload bench: ${sizeMiB} MiB file`);

  const cpMs = await best('cp', async (i) => run('cp', [src, join(dir, `cp-${i}.bin`)]));
  const cpSyncMs = await best('cp + sync', async (i) => {
    const dst = join(dir, `cps-${i}.bin`);
    run('cp', [src, dst]);
    run('sync', [dst]);
  });
  const putMs = await best('BlobStore.put (sha256+fsync)', async (i) => {
    const store = new FsBlobStore(join(dir, `store-${i}`));
    const info = await store.put(createReadStream(src, { highWaterMark: MIB }));
    if (info.length !== sizeMiB * MIB) throw new Error(`stored ${info.length} bytes`);
  });
  console.log(`ratio put/cp:        ${(putMs / cpMs).toFixed(2)}x the time of cp`);
  console.log(`ratio put/(cp+sync): ${(putMs / cpSyncMs).toFixed(2)}x the time of cp + sync`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
