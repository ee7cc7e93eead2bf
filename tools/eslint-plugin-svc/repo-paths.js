// Repository paths named in comments and docs must exist: a file that moved leaves a comment
// or a doc pointing nowhere. A path is checked against the places a reader would look: the
// repository root, the naming file's folder, its package and the package's `src/`, and every
// package's `src/` (comments name files across packages by their path inside `src/`).
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// JSON names are left out: comments name entries of archives and upstream schema trees by them.
const EXT = 'ts|tsx|js|mjs|cjs|md|proto|sh|sql|ya?ml';
/** `dir/file.ext` (at least one folder), not part of a URL, a package specifier or a glob. */
const PATH = new RegExp(`(?<![\\w@:/.*<{-])((?:\\.{1,2}/)?[\\w.-]+(?:/[\\w.-]+)*/[\\w.-]+\\.(?:${EXT}))(?![\\w/*<{-])`, 'g');

const packageRoots = ['apps', 'packages'].flatMap((d) =>
  existsSync(join(ROOT, d))
    ? readdirSync(join(ROOT, d), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => join(ROOT, d, e.name))
    : [],
);

function packageOf(file) {
  return packageRoots.find((p) => file === p || file.startsWith(p + sep));
}

/** The folders a path named in `file` may be relative to. */
export function basesFor(file) {
  const pkg = packageOf(file);
  const own = [ROOT, dirname(file)];
  if (pkg) own.push(pkg, join(pkg, 'src'), join(pkg, 'test'));
  // a sibling folder: a file of `resources/vulnerabilities` named from `resources/findings/`
  own.push(dirname(dirname(file)));
  return [...own, ...packageRoots, ...packageRoots.map((p) => join(p, 'src')), join(ROOT, 'docs')];
}

/** Paths in `text` (named from `file`) that exist under none of the bases. */
export function missingPaths(text, file) {
  const bases = basesFor(file);
  const out = [];
  for (const m of text.matchAll(PATH)) {
    const p = m[1];
    // a dotted name such as `fastify.inject` or a version such as `v1.2/x.json` is not a path
    if (/^\d|\/\d+\.\d+\./.test(p) || p.includes('//')) continue;
    // build output and placeholders (`NNNN_name.ts`) name no source file
    if (/(^|\/)dist\//.test(p) || p.includes('NNNN')) continue;
    // TypeScript sources are imported by their `.js` names
    const names = /\.js$/.test(p) ? [p, p.replace(/\.js$/, '.ts'), p.replace(/\.js$/, '.tsx')] : [p];
    if (!bases.some((b) => names.some((n) => existsSync(join(b, n))))) out.push(p);
  }
  return out;
}

export function displayPath(file) {
  return relative(ROOT, file);
}
