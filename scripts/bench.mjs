// Runs the `bench` script of every workspace package that has one, one after the
// other (benchmarks measure speed: running two at once on a shared machine would
// measure each other). Output streams through with a header per package; the exit
// status is non-zero when any benchmark failed (named at the end, on stderr) or when no
// package has a bench script (nothing was measured).
// `pnpm bench` builds everything first (turbo run build), so packages bench their dist.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
// The workspace globs of pnpm-workspace.yaml: packages/* and apps/*.
const WORKSPACE_DIRS = ['packages', 'apps'];

/** Every workspace package with a `bench` script, in a stable order (packages before apps). */
export function discover(rootDir = root) {
  const found = [];
  for (const group of WORKSPACE_DIRS) {
    const dir = join(rootDir, group);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (!entry.isDirectory()) continue;
      const manifest = join(dir, entry.name, 'package.json');
      if (!existsSync(manifest)) continue;
      let pkg;
      try {
        pkg = JSON.parse(readFileSync(manifest, 'utf8'));
      } catch (e) {
        throw new Error(`${manifest}: not JSON (${e.message})`, { cause: e });
      }
      if (typeof pkg.scripts?.bench === 'string' && typeof pkg.name === 'string') {
        found.push({ name: pkg.name, dir: join(group, entry.name), script: pkg.scripts.bench });
      }
    }
  }
  return found;
}

/** Runs the benches of `rootDir` (all, or only the named packages); returns the exit status. */
export function runBenches(rootDir = root, only = []) {
  let benches = discover(rootDir);
  if (only.length > 0) {
    const unknown = only.filter((n) => !benches.some((b) => b.name === n));
    if (unknown.length > 0) {
      console.error(`bench: no bench script in ${unknown.join(', ')}`);
      return 2;
    }
    benches = benches.filter((b) => only.includes(b.name));
  }
  if (benches.length === 0) {
    console.error('bench: no workspace package has a bench script');
    return 1;
  }
  const results = [];
  for (const b of benches) {
    console.log(`\n=== ${b.name} (${b.dir}): ${b.script} ===`);
    const started = process.hrtime.bigint();
    const r = spawnSync('pnpm', ['--filter', b.name, 'run', 'bench'], { cwd: rootDir, stdio: 'inherit' });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const ok = r.status === 0;
    const why = r.error ? r.error.message : r.signal ? `signal ${r.signal}` : `exit ${r.status}`;
    console.log(`=== ${b.name}: ${ok ? 'ok' : `FAILED (${why})`} in ${seconds.toFixed(1)} s ===`);
    results.push({ name: b.name, ok });
  }
  const failed = results.filter((r) => !r.ok);
  const summary = `bench: ${results.length - failed.length} passed, ${failed.length} failed${failed.length ? `: ${failed.map((f) => f.name).join(', ')}` : ''}`;
  if (failed.length === 0) console.log(`\n${summary}`);
  else console.error(`\n${summary}`);
  return failed.length === 0 ? 0 : 1;
}

// Run only as a script: tests import discover() without running every benchmark.
// Usage: node scripts/bench.mjs [--root DIR] [package name ...]
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  let rootDir = root;
  const at = args.indexOf('--root');
  if (at !== -1) {
    rootDir = resolve(args[at + 1] ?? '.');
    args.splice(at, 2);
  }
  process.exitCode = runBenches(rootDir, args);
}
