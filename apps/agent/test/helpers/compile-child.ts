import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';

const agentRoot = resolve(import.meta.dirname, '../..');
const coreRoot = resolve(agentRoot, '../../packages/release-core');
/** The test helpers a child process may import (the rest use vitest). */
const CHILD_HELPERS = ['crash-child.ts', 'fake-slot-driver.ts'];

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') && !e.name.endsWith('.test.ts')) yield p;
  }
}

/**
 * Crash tests run the orchestrator in a real child process that gets SIGKILLed. Node 20
 * cannot run TypeScript, and tests must not depend on a (possibly stale) build, so this
 * transpiles the current sources file by file (isolatedModules makes that exact) into
 * `outDir`, pointing `@svc/release-core` at its transpiled sources and other bare imports
 * at the files release-core resolves them to. Returns the path of the compiled `entry`.
 */
export async function compileChild(outDir: string, entry: string): Promise<string> {
  // ESM resolution as release-core itself would see it (exports maps, import condition).
  const resolved = new Map<string, string>();
  const resolveFrom = (pkgRoot: string, spec: string): string => {
    let url = resolved.get(`${pkgRoot}\0${spec}`);
    if (url === undefined) {
      try {
        url = execFileSync(process.execPath, ['--input-type=module', '-e', `process.stdout.write(import.meta.resolve(${JSON.stringify(spec)}))`], {
          cwd: pkgRoot,
          encoding: 'utf8',
          stdio: 'pipe',
        });
      } catch {
        url = spec; // not resolvable here (e.g. an unbuilt workspace package): the child never imports that file
      }
      resolved.set(`${pkgRoot}\0${spec}`, url);
    }
    return url;
  };
  const roots = [
    { src: join(agentRoot, 'src'), out: join(outDir, 'agent/src'), pkg: agentRoot },
    { src: join(agentRoot, 'test/helpers'), out: join(outDir, 'agent/test/helpers'), pkg: agentRoot },
    { src: join(coreRoot, 'src'), out: join(outDir, 'core/src'), pkg: coreRoot },
  ];
  const coreIndex = join(outDir, 'core/src/index.js');
  for (const root of roots) {
    for await (const file of tsFiles(root.src)) {
      if (root.src.endsWith('helpers') && !CHILD_HELPERS.some((h) => file.endsWith(`/${h}`))) continue;
      const { outputText } = ts.transpileModule(await readFile(file, 'utf8'), {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
        fileName: file,
      });
      const out = join(root.out, relative(root.src, file)).replace(/\.ts$/, '.js');
      const rewritten = outputText.replace(/(from\s+|import\s*\(\s*)'([^'.][^']*)'/g, (all, pre: string, spec: string) => {
        if (spec.startsWith('node:')) return all;
        if (spec === '@svc/release-core') return `${pre}'${pathToFileURL(coreIndex).href}'`;
        return `${pre}'${resolveFrom(root.pkg, spec)}'`;
      });
      await mkdir(dirname(out), { recursive: true });
      await writeFile(out, rewritten);
    }
  }
  await writeFile(join(outDir, 'package.json'), '{"type":"module"}');
  return join(outDir, 'agent/test/helpers', entry.replace(/\.ts$/, '.js'));
}
