/**
 * Reading PDFs the way a person (or an auditor's tool) would: text through poppler's
 * `pdftotext -layout`, page count through `pdfinfo`, pages rendered to pixels through
 * `pdftoppm` (PPM, parsed here) or to a PNG file to look at. And a PNG encoder for logos.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';

function withPdf<T>(bytes: Uint8Array, fn: (file: string, dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pdf-test-'));
  try {
    const file = join(dir, 'in.pdf');
    writeFileSync(file, bytes);
    return fn(file, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** The text of every page, laid out (`pdftotext -layout`); pages separated by form feeds. */
export function pdfToText(bytes: Uint8Array): string {
  return withPdf(bytes, (file) => run('pdftotext', ['-layout', '-enc', 'UTF-8', file, '-']));
}

export function pdfPageCount(bytes: Uint8Array): number {
  return withPdf(bytes, (file) => Number(/^Pages:\s+(\d+)$/m.exec(run('pdfinfo', [file]))![1]));
}

export interface Raster {
  width: number;
  height: number;
  /** RGB, 3 bytes per pixel, row-major. */
  rgb: Buffer;
}

/** One page rendered by `pdftoppm` at `dpi` (PPM P6, parsed). */
export function renderPage(bytes: Uint8Array, page: number, dpi = 60): Raster {
  return withPdf(bytes, (file, dir) => {
    run('pdftoppm', ['-r', String(dpi), '-f', String(page), '-l', String(page), '-singlefile', file, join(dir, 'page')]);
    const ppm = readFileSync(join(dir, 'page.ppm'));
    const m = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(ppm.subarray(0, 64).toString('latin1'))!;
    return { width: Number(m[1]), height: Number(m[2]), rgb: ppm.subarray(m[0].length) };
  });
}

/** Writes one page as a PNG file (to look at). */
export function renderPagePng(bytes: Uint8Array, page: number, outPrefix: string, dpi = 80): string {
  return withPdf(bytes, (file) => {
    run('pdftoppm', ['-png', '-r', String(dpi), '-f', String(page), '-l', String(page), '-singlefile', file, outPrefix]);
    return `${outPrefix}.png`;
  });
}

/** Pixels within `tolerance` of `#rrggbb` in the region (whole page by default). */
export function countColor(r: Raster, hex: string, o: { tolerance?: number; region?: { x: number; y: number; w: number; h: number } } = {}): number {
  const [R, G, B] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const tol = o.tolerance ?? 6;
  const reg = o.region ?? { x: 0, y: 0, w: r.width, h: r.height };
  let n = 0;
  for (let y = reg.y; y < Math.min(r.height, reg.y + reg.h); y++) {
    for (let x = reg.x; x < Math.min(r.width, reg.x + reg.w); x++) {
      const i = (y * r.width + x) * 3;
      if (Math.abs(r.rgb[i]! - R!) <= tol && Math.abs(r.rgb[i + 1]! - G!) <= tol && Math.abs(r.rgb[i + 2]! - B!) <= tol) n++;
    }
  }
  return n;
}

/** A solid-colour RGB PNG (8-bit, no filter), as a `data:` URL for the branding logo. */
export function solidPng(width: number, height: number, hex: string): Buffer {
  const rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
