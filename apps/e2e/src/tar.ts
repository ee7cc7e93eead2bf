import { E2eError } from './errors.js';

export interface TarEntry {
  name: string;
  bytes: Buffer;
}

/**
 * Reads a plain ustar archive (the receipt export, spec §4: "a tar batch of receipt envelopes
 * with an index"). Only regular files; a header whose checksum does not add up is MALFORMED,
 * so a truncated or garbled export cannot pass as an empty one.
 */
export function readTar(buf: Buffer): TarEntry[] {
  const out: TarEntry[] = [];
  let off = 0;
  while (off + 512 <= buf.length) {
    const header = buf.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, len: number) =>
      header
        .subarray(start, start + len)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim();
    const expected = parseInt(field(148, 8), 8);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!;
    if (sum !== expected) throw new E2eError('MALFORMED', `tar header at ${off}: checksum ${sum} != ${expected}`);
    const prefix = field(345, 155);
    const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const size = parseInt(field(124, 12), 8);
    const type = field(156, 1) || '0';
    if (off + 512 + size > buf.length) throw new E2eError('MALFORMED', `tar entry ${name}: truncated`);
    if (type === '0') out.push({ name, bytes: Buffer.from(buf.subarray(off + 512, off + 512 + size)) });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
