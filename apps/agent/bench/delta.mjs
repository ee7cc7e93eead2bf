// Delta updates of a file member (docs/delta-updates.md), measured in one run against
// baselines of the same run (docs/development.md: ratios, never timed tests). Runs against
// dist/ (`pnpm bench` builds first). BENCH_DELTA_MIB sets the member size (default 64).
//
// A model of BENCH_DELTA_MIB MiB whose new version changes 3% of its bytes in scattered 4 KiB
// blocks. Targets (met / not met):
// - bytes sent through the delta <= 10% of the full member;
// - device: zstd applying the delta <= 2x the time of verifying the full file's SHA-256 (the
//   whole delivery, which also checks the source and the rebuilt member, is reported beside it);
// - device: the agent process's peak RSS < 100 MiB while it delivers the member (zstd runs as
//   a child; its own peak is reported, of which the source's mapped pages are a part);
// - server: making the delta vs zstd compressing the full member, reported as a ratio.
// RAUC adaptive streaming (bytes streamed vs the full bundle, target <= 25%) is measured only
// where RAUC can stream; elsewhere the bench prints why it is not measurable, never a number.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Digest, zstdDeltaArgs } from '@svc/release-core';

const MIB = 1024 * 1024;
const size = Number(process.env.BENCH_DELTA_MIB ?? 64) * MIB;
const time = spawnSync('sh', ['-c', 'command -v /usr/bin/time'], { stdio: 'ignore' }).status === 0;

/**
 * Runs a command; answers its wall time in ms and, where GNU time is installed, its peak RSS in
 * bytes and its CPU time (user + system) in ms.
 */
function measured(cmd, args) {
  const t0 = process.hrtime.bigint();
  const r = time ? spawnSync('/usr/bin/time', ['-f', '%M %U %S', cmd, ...args], { encoding: 'utf8' }) : spawnSync(cmd, args, { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  const [kb, user, sys] = time ? (r.stderr.trim().split('\n').at(-1) ?? '').split(' ').map(Number) : [NaN, NaN, NaN];
  return { ms, rss: Number.isFinite(kb) ? kb * 1024 : null, cpuMs: Number.isFinite(user) && Number.isFinite(sys) ? (user + sys) * 1000 : null };
}

async function sha256File(path) {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest('hex');
}

const best = async (n, fn) => {
  let out;
  for (let i = 0; i < n; i++) {
    const r = await fn();
    if (out === undefined || r.ms < out.ms) out = r;
  }
  return out;
};

/**
 * Why RAUC adaptive streaming cannot run on this machine (docs/delta-updates.md "What RAUC 1.8
 * needs to stream"), or an empty list where it could.
 */
function raucStreamingMissing() {
  const missing = [];
  const rauc = ['/usr/bin/rauc', '/usr/local/bin/rauc'].find((p) => existsSync(p));
  if (rauc === undefined) missing.push('no rauc binary');
  else if (readFileSync(rauc).includes('configured without --enable-streaming')) missing.push(`${rauc} is built without --enable-streaming`);
  if (!readdirSync('/dev').some((n) => /^nbd\d+$/.test(n))) missing.push('no /dev/nbd* (nbd not in the kernel)');
  if (!existsSync('/dev/mapper/control')) missing.push('no /dev/mapper/control (device-mapper, needed for dm-verity bundles)');
  return missing;
}

const mib = (b) => (b === null ? 'n/a' : `${(b / MIB).toFixed(0)} MiB`);
const verdict = (ok) => (ok ? 'met' : 'NOT MET');

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-delta-'));
try {
  const old = randomBytes(size);
  const neu = Buffer.from(old);
  const blocks = size / 4096;
  const changed = Math.round(blocks * 0.03);
  for (let i = 0; i < changed; i++) randomBytes(4096).copy(neu, Math.floor((i * blocks) / changed) * 4096);
  const files = { source: join(dir, 'v1'), target: join(dir, 'v2'), delta: join(dir, 'v1-v2.zst'), full: join(dir, 'v2.zst'), out: join(dir, 'out') };
  await writeFile(files.source, old);
  await writeFile(files.target, neu);

  // server: the delta vs compressing the full member, same zstd, level and thread count
  const sizes = { sourceLength: old.length, targetLength: neu.length };
  const make = await best(3, () => measured('zstd', zstdDeltaArgs('create', { source: files.source, input: files.target, output: files.delta }, sizes)));
  const full = await best(3, () => measured('zstd', ['-q', '-f', '-T1', '-3', files.target, '-o', files.full]));
  const deltaBytes = (await stat(files.delta)).size;

  // device: zstd applying the delta vs verifying the full file's digest
  const apply = await best(3, () => measured('zstd', zstdDeltaArgs('apply', { source: files.source, input: files.delta, output: files.out })));
  const verify = await best(3, async () => {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    await sha256File(files.target);
    const c = process.cpuUsage(c0);
    return { ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: (c.user + c.system) / 1000 };
  });

  // device: the agent's whole delivery (source check, zstd, digest of the rebuilt member) in a
  // process of its own with the agent's V8 flags (its shebang), so its peak RSS is the delivery's alone
  const live = join(dir, 'live');
  await copyFile(files.source, live);
  const wrapper = join(dir, 'zstd-timed');
  const childRss = join(dir, 'zstd-rss');
  // zstd through GNU time, so the child's peak is known too
  await writeFile(wrapper, time ? `#!/bin/sh\nexec /usr/bin/time -a -o ${childRss} -f %M zstd "$@"\n` : '#!/bin/sh\nexec zstd "$@"\n');
  await chmod(wrapper, 0o755);
  const job = {
    member: { component: 'model', kind: 'model', rolloutId: 'r', target: 'models/m', digest: sha256Digest(neu), length: neu.length, mediaType: 'x' },
    source: { digest: sha256Digest(old), path: live },
    delta: files.delta,
    deltaBytes,
    dir: join(dir, 'staging'),
    zstd: wrapper,
  };
  const child = spawnSync(
    process.execPath,
    ['--max-semi-space-size=1', '--lite-mode', new URL('./delta-device.mjs', import.meta.url).pathname, JSON.stringify(job)],
    { encoding: 'utf8' },
  );
  if (child.status !== 0) throw new Error(`delivery process failed: ${child.stderr}`);
  const { deliverMs, agentRss, delivery } = JSON.parse(child.stdout);
  if (delivery.method !== 'delta') throw new Error(`the member was not delivered through the delta: ${JSON.stringify(delivery)}`);
  const zstdRss = time ? Math.max(...(await readFile(childRss, 'utf8')).trim().split('\n').map(Number)) * 1024 : null;

  const sent = deltaBytes / neu.length;
  console.log(`member ${mib(neu.length)}, 3% of its bytes changed in ${changed} scattered 4 KiB blocks`);
  console.log(
    `bytes sent         delta ${(deltaBytes / 1024).toFixed(0)} KiB = ${(sent * 100).toFixed(2)}% of the full member (target <= 10%): ${verdict(sent <= 0.1)}`,
  );
  console.log(
    `server make        ${make.ms.toFixed(0)} ms, peak ${mib(make.rss)}; zstd -3 of the full member ${full.ms.toFixed(0)} ms, peak ${mib(full.rss)}: ratio ${(make.ms / full.ms).toFixed(2)}`,
  );
  const ratio = apply.ms / verify.ms;
  console.log(
    `device apply       zstd ${apply.ms.toFixed(0)} ms vs SHA-256 of the full file ${verify.ms.toFixed(0)} ms: ratio ${ratio.toFixed(2)} (target <= 2): ${verdict(ratio <= 2)}`,
  );
  if (apply.cpuMs !== null && make.cpuMs !== null && full.cpuMs !== null) {
    // CPU time is what a busy machine does not inflate (wall time waits for the other processes)
    console.log(
      `cpu time           apply ${apply.cpuMs.toFixed(0)} ms vs SHA-256 ${verify.cpuMs.toFixed(0)} ms: ratio ${(apply.cpuMs / verify.cpuMs).toFixed(2)}; make ${make.cpuMs.toFixed(0)} ms vs zstd -3 of the full member ${full.cpuMs.toFixed(0)} ms: ratio ${(make.cpuMs / full.cpuMs).toFixed(2)}`,
    );
  }
  console.log(
    `device delivery    whole delivery ${deliverMs.toFixed(0)} ms (source check, zstd, rebuilt digest): ratio ${(deliverMs / verify.ms).toFixed(2)} to one verification`,
  );
  console.log(`device memory      agent peak RSS ${mib(agentRss)} (target < 100 MiB): ${verdict(agentRss < 100 * MIB)}; zstd child peak ${mib(zstdRss)}`);
  const missing = raucStreamingMissing();
  console.log(
    missing.length > 0
      ? `rauc adaptive      not measurable here (target <= 25% of the bundle streamed): ${missing.join('; ')}`
      : 'rauc adaptive      RAUC can stream here, but this bench does not drive it: apps/agent/test/rauc-streaming.test.ts (its third case) measures the bytes streamed',
  );
  if (!(sent <= 0.1 && ratio <= 2 && agentRss < 100 * MIB)) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
