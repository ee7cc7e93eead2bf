#!/usr/bin/env node
// Fails the build when the JavaScript a first visit loads (the entry script of dist/index.html
// and every module it preloads) exceeds the budget, gzip-compressed as the server sends it.
// Usage: node scripts/budget.mjs [--dist DIR]   (default: this package's dist/)
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';

export const BUDGET_BYTES = 250 * 1024;
const at = process.argv.indexOf('--dist');
const dist = at === -1 ? resolve(import.meta.dirname, '../dist') : resolve(process.argv[at + 1] ?? '.');

function initialScripts(html) {
  const srcs = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]);
  const preloads = [...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g)].map((m) => m[1]);
  return [...new Set([...srcs, ...preloads])];
}

const html = readFileSync(join(dist, 'index.html'), 'utf8');
if (/<script(?![^>]*\ssrc=)[^>]*>/.test(html)) {
  console.error('budget: dist/index.html has an inline script (the CSP forbids it)');
  process.exit(1);
}
let total = 0;
for (const src of initialScripts(html)) {
  const bytes = gzipSync(readFileSync(join(dist, src)), { level: 9 }).length;
  total += bytes;
  console.log(`budget: ${src} ${(bytes / 1024).toFixed(1)} KB gzip`);
}
const verdict = total <= BUDGET_BYTES ? 'within' : 'OVER';
console.log(`budget: initial JavaScript ${(total / 1024).toFixed(1)} KB gzip, ${verdict} the ${BUDGET_BYTES / 1024} KB budget`);
if (total > BUDGET_BYTES) process.exit(1);
