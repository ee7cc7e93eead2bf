import type { Readable } from 'node:stream';

/** One entry of an archive: its path and its bytes (a string is written as UTF-8). */
export type TarInput = Iterable<readonly [string, Buffer | Uint8Array | string]> | ReadonlyArray<{ name: string; data: Buffer | Uint8Array | string }>;

export interface WriteTarOptions {
  /** Modification time of every entry in seconds since the epoch (default: now). */
  mtime?: number;
  /** Permission bits of every entry (default 0o644). */
  mode?: number;
}

function pairs(input: TarInput): [string, Buffer][] {
  const out: [string, Buffer][] = [];
  for (const e of input as Iterable<unknown>) {
    const [name, data] = Array.isArray(e)
      ? (e as [string, Buffer | Uint8Array | string])
      : [(e as { name: string }).name, (e as { data: Buffer | Uint8Array | string }).data];
    out.push([name, typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
  }
  return out;
}

const octal = (n: number, width: number) => `${n.toString(8).padStart(width - 1, '0')}\0`;

/** Splits a path longer than the 100-byte name field into ustar's prefix (155 bytes) and name. */
function splitName(path: string): { name: string; prefix: string } {
  if (Buffer.byteLength(path) <= 100) return { name: path, prefix: '' };
  for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name.length > 0) return { name, prefix };
  }
  throw new Error(`tar: the path "${path.slice(0, 60)}..." does not fit a ustar header (name 100 bytes, prefix 155)`);
}

/**
 * A plain ustar archive of regular files, in the order given, written synchronously: the
 * format the server's exports and the OSV feeds use, readable by `tar -x`.
 */
export function writeTar(input: TarInput, options: WriteTarOptions = {}): Buffer {
  const mtime = options.mtime ?? Math.floor(Date.now() / 1000);
  const mode = options.mode ?? 0o644;
  const blocks: Buffer[] = [];
  for (const [path, body] of pairs(input)) {
    const { name, prefix } = splitName(path);
    const h = Buffer.alloc(512);
    h.write(name, 0, 100, 'utf8');
    h.write(octal(mode, 8), 100, 'latin1');
    h.write(octal(0, 8), 108, 'latin1');
    h.write(octal(0, 8), 116, 'latin1');
    h.write(octal(body.length, 12), 124, 'latin1');
    h.write(octal(mtime, 12), 136, 'latin1');
    h.write(' '.repeat(8), 148, 'latin1');
    h.write('0', 156, 'latin1');
    h.write('ustar\u000000', 257, 'latin1');
    h.write(prefix, 345, 155, 'utf8');
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    blocks.push(h, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/**
 * The regular files of a tar archive by path (what `tar -x` would write), in archive order.
 * Reads ustar and the pax `path` records long names use; a header whose checksum does not add
 * up, or an entry cut short, is an error, so a garbled archive never reads as a short one.
 */
export function readTar(buf: Buffer | Uint8Array): Map<string, Buffer> {
  const data = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const out = new Map<string, Buffer>();
  let paxPath: string | undefined;
  let off = 0;
  while (off + 512 <= data.length) {
    const h = data.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const field = (start: number, len: number) =>
      h
        .subarray(start, start + len)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim();
    const expected = parseInt(field(148, 8), 8);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
    if (sum !== expected) throw new Error(`tar: header at byte ${off}: checksum ${sum}, header says ${expected}`);
    const size = parseInt(field(124, 12), 8) || 0;
    const type = field(156, 1) || '0';
    const prefix = field(345, 155);
    const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    if (off + 512 + size > data.length) throw new Error(`tar: entry ${name} is cut short`);
    const body = data.subarray(off + 512, off + 512 + size);
    if (type === 'x') {
      // pax extended header: "<len> path=<value>\n" records for the next entry
      const m = body.toString('utf8').match(/(?:^|\n)\d+ path=([^\n]*)\n/);
      if (m) paxPath = m[1];
    } else if (type === '0') {
      out.set(paxPath ?? name, Buffer.from(body));
      paxPath = undefined;
    } else if (type !== 'g') {
      paxPath = undefined;
    }
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

/** {@link readTar} of a stream (an HTTP body, a file) or of bytes. */
export async function untar(input: Buffer | Uint8Array | Readable | AsyncIterable<Uint8Array>): Promise<Map<string, Buffer>> {
  if (input instanceof Uint8Array) return readTar(input);
  const chunks: Buffer[] = [];
  for await (const c of input as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(c));
  return readTar(Buffer.concat(chunks));
}
