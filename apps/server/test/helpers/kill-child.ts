/**
 * Crash harness for fault-injection suites: a real child process runs the server's own
 * modules, parks at a hook by printing `AT <step>`, and the parent SIGKILLs it there, so a
 * test sees exactly what a power cut at that step leaves behind.
 *
 * Node 20 cannot run TypeScript, so the modules the child needs are transpiled (no type
 * check: tsc -b does that) into a throwaway folder under node_modules/.cache.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import ts from 'typescript';

export const serverDir = join(import.meta.dirname, '..', '..');

/** What a child needs to open the store (src/store/open.ts and what it imports). */
export const STORE_FILES = [
  'src/store/open.ts',
  'src/store/pglite-init.ts',
  'src/built-file.ts',
  'src/store/pglite-schema.ts',
  'src/store/notify.ts',
  'src/store/prepared.ts',
];

/** Transpiles `files` plus every .ts file of `dirs` (paths relative to apps/server) and writes `child.mjs`. */
export async function transpileForChild(name: string, opts: { files: string[]; dirs: string[]; childSource: string }): Promise<string> {
  const out = join(serverDir, 'node_modules', '.cache', `${name}-${randomUUID()}`);
  const files = [...opts.files];
  for (const root of opts.dirs) for (const f of await readdir(join(serverDir, root))) if (f.endsWith('.ts')) files.push(`${root}/${f}`);
  for (const file of files) {
    const { outputText } = ts.transpileModule(await readFile(join(serverDir, file), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    const dest = join(out, file.replace(/\.ts$/, '.js'));
    await mkdir(dirname(dest), { recursive: true });
    await writeFile(dest, outputText);
  }
  await writeFile(join(out, 'child.mjs'), opts.childSource);
  return out;
}

export interface KilledChild {
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `child.mjs cfg.json` of `childDir` (or `script`, with the config written into
 * `childDir`); SIGKILLs it as soon as it prints `AT `; fails after 60 s.
 */
export async function runChildUntilKilled(childDir: string, cfg: object, script = join(childDir, 'child.mjs')): Promise<KilledChild> {
  const cfgFile = join(childDir, `cfg-${randomUUID()}.json`);
  await writeFile(cfgFile, JSON.stringify(cfg));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, cfgFile], { cwd: serverDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child never reached the kill point; stdout=${stdout} stderr=${stderr}`));
    }, 60_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('AT ')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, stdout, stderr });
    });
  });
}
