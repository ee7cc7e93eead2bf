/**
 * Reading an uploaded OSV archive (as OSV publishes per ecosystem: `all.zip` of one JSON
 * record per file; a tar or tar.gz of the same is accepted too) without trusting it. Two
 * passes over the stored file: `surveyArchive` lists the record entries and refuses the
 * archive (a 400 before anything is written) for an unsafe entry name (absolute, `..`,
 * backslash, NUL), a link entry, too many entries, or an expansion past the caps (zip
 * bombs: declared sizes, per-entry and whole-archive ratios, and the bytes actually
 * inflated); `readRecords` then yields each record's bytes in the same order from a given
 * position (resuming an import), or why it is skipped (over the record cap, a size that
 * lies about its header). Nothing is extracted to disk. yauzl reads zips; tar-stream tars.
 */
import { createReadStream } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { crc32, createGunzip, inflateRawSync } from 'node:zlib';
import { extract, type Header } from 'tar-stream';
import yauzl from 'yauzl';
import { ServerError } from '../../errors/server-error.js';
import { SERVER_LIMITS, SERVER_TUNING } from '../../limits.js';

export type ArchiveFormat = 'zip' | 'tar' | 'tar.gz';

export interface ArchiveEntry {
  /** position among the record entries (the import's cursor counts these) */
  index: number;
  name: string;
  size: number;
  /** why the record will be skipped, decided from its header */
  skip?: string;
  /** where a zip entry's data is (read again without the central directory) */
  zip?: ZipLocation;
}

interface ZipLocation {
  offset: number;
  compressedSize: number;
  uncompressedSize: number;
  crc32: number;
  method: number;
  encrypted: boolean;
}

export interface Survey {
  format: ArchiveFormat;
  entries: ArchiveEntry[];
}

export type RecordItem = { index: number; name: string; bytes: Buffer } | { index: number; name: string; skip: string };

const invalid = (m: string) => new ServerError('FEED_INVALID', m);
const tooLarge = (m: string) => new ServerError('FEED_TOO_LARGE', m);

/** Zip local header, gzip magic, or `ustar` at 257. */
export async function detectFormat(path: string): Promise<ArchiveFormat> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await fh.read(head, 0, 512, 0);
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0x04034b50) return 'zip';
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0x06054b50) return 'zip';
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tar.gz';
    if (bytesRead >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
  } finally {
    await fh.close();
  }
  throw invalid('body: not a zip, tar or tar.gz archive');
}

/** An entry name a feed may carry: relative, no `..`, no backslash, no NUL. */
export function checkEntryName(name: string): void {
  const shown = JSON.stringify(name.slice(0, 200));
  if (name.includes('\0') || name.includes('\\')) throw invalid(`entry ${shown}: unsafe name (NUL or backslash)`);
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw invalid(`entry ${shown}: absolute path`);
  if (name.split('/').some((s) => s === '..')) throw invalid(`entry ${shown}: path traversal ("..")`);
}

const isRecordName = (name: string) => name.endsWith('.json') && !name.split('/').some((s) => s.startsWith('.'));

function skipFor(size: number): string | undefined {
  return size > SERVER_LIMITS.feeds.maxRecordBytes ? `record larger than ${SERVER_LIMITS.feeds.maxRecordBytes} bytes` : undefined;
}

async function openZip(path: string): Promise<{ zip: yauzl.ZipFile; buffer: Buffer | undefined }> {
  const size = (await stat(path)).size;
  const options = { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true, strictFileNames: false };
  const buffer = size <= SERVER_TUNING.inMemoryZipBytes ? await readFile(path) : undefined;
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, zip?: yauzl.ZipFile) => {
      if (err || !zip) reject(invalid(`body: not a readable zip (${err?.message ?? 'unknown error'})`));
      else resolve({ zip, buffer });
    };
    if (buffer) yauzl.fromBuffer(buffer, options, done);
    else yauzl.open(path, options, done);
  });
}

/**
 * One entry of an in-memory zip, inflated synchronously and checked as yauzl checks a
 * stream: at most the record cap, exactly the header's size, the header's CRC-32.
 */
function entryBytes(buf: Buffer, e: ZipLocation): Buffer {
  const at = e.offset;
  if (at + 30 > buf.length || buf.readUInt32LE(at) !== 0x04034b50) throw new Error('no local file header');
  if (e.encrypted) throw new Error('encrypted');
  const start = at + 30 + buf.readUInt16LE(at + 26) + buf.readUInt16LE(at + 28);
  const data = buf.subarray(start, start + e.compressedSize);
  if (data.length !== e.compressedSize) throw new Error('truncated');
  let out: Buffer;
  if (e.method === 0) out = data;
  else if (e.method === 8) out = inflateRawSync(data, { maxOutputLength: SERVER_LIMITS.feeds.maxRecordBytes });
  else throw new Error(`compression method ${e.method}`);
  if (out.length !== e.uncompressedSize) throw new Error(`inflated ${out.length} bytes, the header says ${e.uncompressedSize}`);
  if (crc32(out) !== e.crc32) throw new Error('CRC-32 mismatch');
  return out;
}

/** Every entry of a zip's central directory, in order (nothing inflated). */
async function zipEntries(zip: yauzl.ZipFile, each: (e: yauzl.Entry, name: string) => Promise<void>): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (e: yauzl.Entry) => {
      const name = Buffer.isBuffer(e.fileName) ? (e.fileName as Buffer).toString('utf8') : String(e.fileName);
      each(e, name).then(() => zip.readEntry(), reject);
    });
    zip.on('end', () => resolve());
    zip.on('error', (err: Error) => reject(err instanceof ServerError ? err : invalid(`body: not a readable zip (${err.message})`)));
    zip.readEntry();
  });
}

async function surveyZip(path: string): Promise<ArchiveEntry[]> {
  const { zip } = await openZip(path);
  try {
    if (zip.entryCount > SERVER_LIMITS.feeds.maxEntries) throw tooLarge(`body: more than ${SERVER_LIMITS.feeds.maxEntries} entries`);
    const entries: ArchiveEntry[] = [];
    let expanded = 0;
    await zipEntries(zip, async (e, name) => {
      checkEntryName(name);
      if (name.endsWith('/') || !isRecordName(name)) return;
      const skip = skipFor(e.uncompressedSize);
      if (skip === undefined) {
        // spec of a zip bomb: a tiny entry that inflates past any reasonable JSON ratio
        if (e.uncompressedSize > 1024 * 1024 && e.uncompressedSize > SERVER_LIMITS.feeds.maxCompressionRatio * Math.max(1, e.compressedSize)) {
          throw tooLarge(
            `entry ${JSON.stringify(name)}: expands ${Math.round(e.uncompressedSize / Math.max(1, e.compressedSize))}x (more than ${SERVER_LIMITS.feeds.maxCompressionRatio}x)`,
          );
        }
        expanded += e.uncompressedSize;
        if (expanded > SERVER_LIMITS.feeds.maxExpandedBytes) throw tooLarge(`body: expands to more than ${SERVER_LIMITS.feeds.maxExpandedBytes} bytes`);
      }
      const zipAt = {
        offset: e.relativeOffsetOfLocalHeader,
        compressedSize: e.compressedSize,
        uncompressedSize: e.uncompressedSize,
        crc32: e.crc32,
        method: e.compressionMethod,
        encrypted: e.isEncrypted(),
      };
      entries.push({ index: entries.length, name, size: e.uncompressedSize, zip: zipAt, ...(skip ? { skip } : {}) });
    });
    return entries;
  } finally {
    zip.close();
  }
}

function readStream(stream: NodeJS.ReadableStream, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    stream.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) {
        (stream as unknown as { destroy(e?: Error): void }).destroy(new Error(`more than ${max} bytes`));
        return;
      }
      parts.push(c);
    });
    stream.on('end', () => resolve(Buffer.concat(parts)));
    stream.on('error', reject);
  });
}

/** An archive small enough to be in memory: each record straight from the surveyed locations. */
async function* zipRecordsInMemory(buffer: Buffer, entries: ArchiveEntry[], from: number): AsyncGenerator<RecordItem> {
  for (const e of entries.slice(from)) {
    if (e.skip) yield { index: e.index, name: e.name, skip: e.skip };
    else {
      let item: RecordItem;
      try {
        item = { index: e.index, name: e.name, bytes: entryBytes(buffer, e.zip!) };
      } catch (err) {
        item = { index: e.index, name: e.name, skip: `entry does not match its header (${(err as Error).message})` };
      }
      yield item;
    }
  }
}

async function* zipRecords(path: string, entries: ArchiveEntry[], from: number): AsyncGenerator<RecordItem> {
  if ((await stat(path)).size <= SERVER_TUNING.inMemoryZipBytes) {
    yield* zipRecordsInMemory(await readFile(path), entries, from);
    return;
  }
  const { zip } = await openZip(path);
  const byName = new Map<number, ArchiveEntry>();
  const queue: RecordItem[] = [];
  let waiting: (() => void) | undefined;
  let done = false;
  let failure: unknown;
  let k = 0;
  const wake = () => {
    const w = waiting;
    waiting = undefined;
    w?.();
  };
  for (const e of entries) byName.set(e.index, e);
  let resumeReading: (() => void) | undefined;
  zip.on('entry', (e: yauzl.Entry) => {
    const name = Buffer.isBuffer(e.fileName) ? (e.fileName as Buffer).toString('utf8') : String(e.fileName);
    if (name.endsWith('/') || !isRecordName(name)) return zip.readEntry();
    const index = k++;
    const known = byName.get(index);
    if (index < from || known === undefined) return zip.readEntry();
    const next = () => {
      wake();
      resumeReading = () => zip.readEntry();
    };
    if (known.skip) {
      queue.push({ index, name, skip: known.skip });
      return next();
    }
    zip.openReadStream(e, (err, stream) => {
      if (err || !stream) {
        queue.push({ index, name, skip: `unreadable entry (${err?.message ?? 'no stream'})` });
        return next();
      }
      readStream(stream, SERVER_LIMITS.feeds.maxRecordBytes).then(
        (bytes) => {
          queue.push({ index, name, bytes });
          next();
        },
        (e2: Error) => {
          // yauzl checks the inflated size against the header: a lie ends the entry, not the import
          queue.push({ index, name, skip: `entry does not match its header (${e2.message})` });
          next();
        },
      );
    });
  });
  zip.on('end', () => {
    done = true;
    wake();
  });
  zip.on('error', (err: Error) => {
    failure = invalid(`body: not a readable zip (${err.message})`);
    wake();
  });
  zip.readEntry();
  try {
    for (;;) {
      while (queue.length > 0) {
        yield queue.shift()!;
        const r = resumeReading;
        resumeReading = undefined;
        r?.();
      }
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- what the archive stream failed with
      if (failure) throw failure;
      if (done) return;
      await new Promise<void>((r) => (waiting = r));
    }
  } finally {
    zip.close();
  }
}

/** Iterates a tar (gzipped or not) with a byte budget on what gunzip produces. */
async function tarWalk(path: string, gz: boolean, onEntry: (h: Header, body: NodeJS.ReadableStream) => Promise<void>): Promise<number> {
  const ex = extract();
  const src = createReadStream(path);
  let inflated = 0;
  const input = gz ? src.pipe(createGunzip()) : src;
  const fileSize = await open(path, 'r').then(async (fh) => {
    try {
      return (await fh.stat()).size;
    } finally {
      await fh.close();
    }
  });
  return new Promise<number>((resolve, reject) => {
    let failed = false;
    const fail = (e: unknown) => {
      if (failed) return;
      failed = true;
      src.destroy();
      ex.destroy();
      reject(e instanceof Error ? e : new Error(String(e)));
    };
    input.on('data', (c: Buffer) => {
      inflated += c.length;
      if (gz && inflated > SERVER_LIMITS.feeds.maxExpandedBytes) fail(tooLarge(`body: expands to more than ${SERVER_LIMITS.feeds.maxExpandedBytes} bytes`));
      else if (gz && inflated > 1024 * 1024 && inflated > SERVER_LIMITS.feeds.maxCompressionRatio * fileSize)
        fail(tooLarge(`body: expands more than ${SERVER_LIMITS.feeds.maxCompressionRatio}x`));
    });
    input.on('error', (e: Error) => fail(invalid(`body: not a readable tar.gz (${e.message})`)));
    ex.on('entry', (h, stream, next) => {
      onEntry(h, stream as unknown as NodeJS.ReadableStream).then(() => {
        stream.resume();
        next();
      }, fail);
    });
    ex.on('finish', () => resolve(inflated));
    ex.on('error', (e: Error) => fail(e instanceof ServerError ? e : invalid(`body: not a readable tar (${e.message})`)));
    input.pipe(ex);
  });
}

async function surveyTar(path: string, gz: boolean): Promise<ArchiveEntry[]> {
  const entries: ArchiveEntry[] = [];
  let count = 0;
  let expanded = 0;
  await tarWalk(path, gz, async (h) => {
    if (++count > SERVER_LIMITS.feeds.maxEntries) throw tooLarge(`body: more than ${SERVER_LIMITS.feeds.maxEntries} entries`);
    checkEntryName(h.name);
    if (h.type === 'symlink' || h.type === 'link') throw invalid(`entry ${JSON.stringify(h.name)}: links are not accepted in a feed`);
    if (h.type !== 'file' || !isRecordName(h.name)) return;
    const size = h.size ?? 0;
    const skip = skipFor(size);
    if (!skip) {
      expanded += size;
      if (expanded > SERVER_LIMITS.feeds.maxExpandedBytes) throw tooLarge(`body: expands to more than ${SERVER_LIMITS.feeds.maxExpandedBytes} bytes`);
    }
    entries.push({ index: entries.length, name: h.name, size, ...(skip ? { skip } : {}) });
  });
  return entries;
}

async function* tarRecords(path: string, gz: boolean, entries: ArchiveEntry[], from: number): AsyncGenerator<RecordItem> {
  // tar-stream pushes; collect per batch-sized window to keep memory bounded
  const items: RecordItem[] = [];
  let k = 0;
  let resolveSpace: (() => void) | undefined;
  let consumerWake: (() => void) | undefined;
  let finished = false;
  let failure: unknown;
  const walking = tarWalk(path, gz, async (h, body) => {
    if (h.type !== 'file' || !isRecordName(h.name)) return;
    const index = k++;
    const known = entries[index];
    if (index < from || known === undefined) return;
    let item: RecordItem;
    if (known.skip) item = { index, name: h.name, skip: known.skip };
    else {
      try {
        item = { index, name: h.name, bytes: await readStream(body, SERVER_LIMITS.feeds.maxRecordBytes) };
      } catch (e) {
        item = { index, name: h.name, skip: `unreadable entry (${(e as Error).message})` };
      }
    }
    items.push(item);
    consumerWake?.();
    if (items.length >= 64) await new Promise<void>((r) => (resolveSpace = r));
  }).then(
    () => {
      finished = true;
      consumerWake?.();
    },
    (e: unknown) => {
      failure = e;
      consumerWake?.();
    },
  );
  for (;;) {
    while (items.length > 0) {
      yield items.shift()!;
      if (items.length < 64 && resolveSpace) {
        const r = resolveSpace;
        resolveSpace = undefined;
        r();
      }
    }
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- what the archive stream failed with
    if (failure) throw failure;
    if (finished) break;
    await new Promise<void>((r) => (consumerWake = r));
    consumerWake = undefined;
  }
  await walking;
}

/** Pass 1: the record entries, or a 400 for an archive that is not safe to read. */
export async function surveyArchive(path: string): Promise<Survey> {
  const format = await detectFormat(path);
  const entries = format === 'zip' ? await surveyZip(path) : await surveyTar(path, format === 'tar.gz');
  return { format, entries };
}

/** Pass 2: the records from position `from` (a resumed import skips what is done). */
export function readRecords(path: string, survey: Survey, from: number): AsyncGenerator<RecordItem> {
  return survey.format === 'zip' ? zipRecords(path, survey.entries, from) : tarRecords(path, survey.format === 'tar.gz', survey.entries, from);
}
