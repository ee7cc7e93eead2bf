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

/** Runs a poppler tool on the PDF (`{}` in `args` is the file); answers its standard output. */
export function pdfTool(bytes: Uint8Array, cmd: string, args: string[]): string {
  return withPdf(bytes, (file) =>
    run(
      cmd,
      args.map((a) => (a === '{}' ? file : a)),
    ),
  );
}

/** Every embedded file (`pdfdetach -saveall`), by name. */
export function pdfAttachments(bytes: Uint8Array): Map<string, Buffer> {
  return withPdf(bytes, (file, dir) => {
    const names = run('pdfdetach', ['-list', '-enc', 'UTF-8', file])
      .split('\n')
      .map((l) => /^\d+: (.*)$/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined);
    const out = new Map<string, Buffer>();
    names.forEach((name, i) => {
      const target = join(dir, `attachment-${i + 1}`);
      run('pdfdetach', ['-save', String(i + 1), '-o', target, file]);
      out.set(name, readFileSync(target));
    });
    return out;
  });
}

/** `pdffonts` rows: name, type, whether embedded. */
export function pdfFonts(bytes: Uint8Array): { name: string; type: string; embedded: boolean; subset: boolean }[] {
  const lines = pdfTool(bytes, 'pdffonts', ['{}'])
    .split('\n')
    .slice(2)
    .filter((l) => l.trim() !== '');
  return lines.map((l) => {
    // the last columns are fixed: emb sub uni object ID
    const m = /^(\S+)\s+(.+?)\s+(\S+)\s+(yes|no)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+\s*$/.exec(l);
    if (m === null) throw new Error(`unexpected pdffonts line: ${l}`);
    return { name: m[1]!, type: m[2]!, embedded: m[4] === 'yes', subset: m[5] === 'yes' };
  });
}

export interface TextLine {
  page: number;
  /** Top and bottom of the line, points from the top of the page. */
  yMin: number;
  yMax: number;
  xMin: number;
  words: { text: string; xMin: number; xMax: number }[];
  text: string;
}

const unescapeXml = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

/**
 * The rendered text as lines with positions (`pdftotext -bbox`): words whose baselines agree
 * (within 1.5 pt) form a line, ordered top to bottom; and each page's height.
 */
export function pdfTextLines(bytes: Uint8Array): { pages: { width: number; height: number }[]; lines: TextLine[] } {
  const html = pdfTool(bytes, 'pdftotext', ['-bbox', '-enc', 'UTF-8', '{}', '-']);
  const pages: { width: number; height: number }[] = [];
  const lines: TextLine[] = [];
  for (const [i, chunk] of html.split('<page ').slice(1).entries()) {
    const size = /width="([\d.]+)" height="([\d.]+)"/.exec(chunk)!;
    pages.push({ width: Number(size[1]), height: Number(size[2]) });
    const words = [...chunk.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((m) => ({
      xMin: Number(m[1]),
      yMin: Number(m[2]),
      xMax: Number(m[3]),
      yMax: Number(m[4]),
      text: unescapeXml(m[5]!),
    }));
    const pageLines: TextLine[] = [];
    for (const w of words.sort((a, b) => a.yMax - b.yMax || a.xMin - b.xMin)) {
      const line = pageLines.find((l) => Math.abs(l.yMax - w.yMax) < 1.5);
      if (line === undefined) pageLines.push({ page: i + 1, yMin: w.yMin, yMax: w.yMax, xMin: w.xMin, words: [w], text: '' });
      else {
        line.words.push(w);
        line.yMin = Math.min(line.yMin, w.yMin);
        line.xMin = Math.min(line.xMin, w.xMin);
      }
    }
    for (const l of pageLines) {
      l.words.sort((a, b) => a.xMin - b.xMin);
      l.text = l.words.map((w) => w.text).join(' ');
    }
    lines.push(...pageLines.sort((a, b) => a.yMax - b.yMax));
  }
  return { pages, lines };
}
