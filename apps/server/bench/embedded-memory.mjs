// Memory of the embedded server as `pnpm start` runs it (docs/server.md, "Memory of the
// embedded server"): its environment and node flags read from the start script, on a fresh data directory,
// the RSS sampled every 200 ms from the start until BENCH_MEMORY_REST_S (25) seconds after it
// listens. Prints the RSS at rest and the peak (VmHWM) of the server process, and the peak of
// any child it started (the one-time initdb of a fresh directory), against the targets for a
// gateway-class box with 1 GiB: < 250 MiB at rest, < 400 MiB peak. Baseline, same run: a bare
// `node` process at rest, so the ratio says what the service adds to the runtime.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchMain, measured, serverLaunch } from './measure.mjs';

const REST_S = Number(process.env.BENCH_MEMORY_REST_S ?? 25);
const TARGETS = { restMiB: 250, peakMiB: 400 };
const MAIN = join(import.meta.dirname, '..', 'dist', 'main.js');

/** `{ rss, hwm }` in MiB of `pid`, or undefined once it is gone. */
async function memoryOf(pid) {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kib = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    const m = { rss: kib('VmRSS') / 1024, hwm: kib('VmHWM') / 1024 };
    // a process that is exiting has no memory lines left
    return Number.isFinite(m.rss) && Number.isFinite(m.hwm) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** The pids of the children of `pid` (from /proc, so a short-lived one is seen while it runs). */
async function childrenOf(pid) {
  const found = [];
  for (const task of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const text = await readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => '');
    found.push(...text.split(' ').filter(Boolean).map(Number));
  }
  return found;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function bareNode() {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  await sleep(3000);
  const m = await memoryOf(child.pid);
  child.kill();
  await once(child, 'exit');
  measured(m !== undefined, 'bare node: no /proc status');
  return m.rss;
}

async function server() {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-memory-'));
  const launch = serverLaunch(await readFile(join(import.meta.dirname, '..', 'package.json'), 'utf8'), 'embedded');
  const child = spawn(process.execPath, [...launch.flags, MAIN], {
    cwd: dir,
    env: { ...process.env, ...launch.env, SVC_DATA_DIR: join(dir, 'data'), SVC_HTTP_ADDR: '127.0.0.1:0', SVC_DEVICE_ADDR: '127.0.0.1:0', SVC_DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (out += d));
  const exited = once(child, 'exit');
  let childPeak = 0;
  let listeningAt;
  let last;
  try {
    for (;;) {
      const m = await memoryOf(child.pid);
      measured(m !== undefined, `the server exited before it was at rest:\n${out.slice(-2000)}`);
      last = m;
      for (const c of await childrenOf(child.pid)) childPeak = Math.max(childPeak, (await memoryOf(c))?.hwm ?? 0);
      if (listeningAt === undefined && /http listening/.test(out)) listeningAt = Date.now();
      if (listeningAt !== undefined && Date.now() - listeningAt >= REST_S * 1000) break;
      await sleep(200);
    }
    return { rest: last.rss, peak: last.hwm, childPeak };
  } finally {
    child.kill();
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

await benchMain('embedded memory', async () => {
  const bare = await bareNode();
  const s = await server();
  const verdict = (ok) => (ok ? 'met' : 'NOT MET');
  console.log(`embedded server memory (pnpm start on a fresh data directory, ${REST_S} s after it listens)`);
  console.log(`  baseline: a bare node process at rest: ${bare.toFixed(0)} MiB`);
  console.log(
    `  RSS at rest: ${s.rest.toFixed(0)} MiB (${(s.rest / bare).toFixed(1)}x bare node); target < ${TARGETS.restMiB} MiB: ${verdict(s.rest < TARGETS.restMiB)}`,
  );
  console.log(`  peak RSS of the server process: ${s.peak.toFixed(0)} MiB; target < ${TARGETS.peakMiB} MiB: ${verdict(s.peak < TARGETS.peakMiB)}`);
  console.log(`  peak RSS of the one-time initdb child (fresh directory only): ${s.childPeak > 0 ? `${s.childPeak.toFixed(0)} MiB` : 'not seen'}`);
});
