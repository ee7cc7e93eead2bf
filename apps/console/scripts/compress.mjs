#!/usr/bin/env node
// Writes `<file>.br` (brotli, quality 11) and `<file>.gz` (gzip, level 9) beside every
// compressible file of dist/, once per build: the server sends them as they are
// (apps/server/src/http/console.ts) instead of compressing at start or per request.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.json', '.svg', '.txt', '.map']);
const at = process.argv.indexOf('--dist');
const dist = at === -1 ? resolve(import.meta.dirname, '../dist') : resolve(process.argv[at + 1] ?? '.');

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
}

let n = 0;
for (const file of files(dist)) {
  if (!COMPRESSIBLE.has(extname(file))) continue;
  const bytes = readFileSync(file);
  if (bytes.length <= 512) continue;
  writeFileSync(
    `${file}.br`,
    brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }),
  );
  writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
  n += 1;
}
console.log(`compress: ${n} files precompressed (br, gz)`);
