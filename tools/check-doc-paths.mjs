// The docs' half of the `svc/repo-path` lint rule: every repository path a Markdown file names
// (outside fenced code, which shows commands and files of other systems) exists. Run by `pnpm lint`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { missingPaths, ROOT } from './eslint-plugin-svc/repo-paths.js';

const files = execFileSync('git', ['ls-files', '*.md'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').filter(Boolean);
let problems = 0;
for (const f of files) {
  const text = readFileSync(join(ROOT, f), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  for (const p of missingPaths(text, join(ROOT, f))) {
    problems += 1;
    console.error(`${f}: names ${p}, which does not exist: name the file where it is now`);
  }
}
if (problems > 0) process.exit(1);
console.log(`doc paths: ${files.length} Markdown files, every repository path they name exists`);
