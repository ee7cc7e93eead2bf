/**
 * The little DER the device-certificate hot path needs (device-cert.ts): reading the TLVs of a
 * CSR and a CA certificate, and writing the fixed shape of a device certificate. Definite
 * lengths only (DER has no other), at most 4 length bytes; anything else is refused.
 */

export class DerError extends Error {}

/** One TLV inside `buf`: the tag byte, where its content starts and ends, where the TLV ends. */
export interface Tlv {
  tag: number;
  start: number;
  contentStart: number;
  end: number;
}

/** The TLV at `at`, which must end within `limit`. */
export function readTlv(buf: Uint8Array, at: number, limit = buf.length): Tlv {
  if (at + 2 > limit) throw new DerError('truncated');
  const tag = buf[at]!;
  // high-tag-number form: never in the structures read here
  if ((tag & 0x1f) === 0x1f) throw new DerError('unsupported tag');
  let len = buf[at + 1]!;
  let contentStart = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || contentStart + n > limit) throw new DerError('bad length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[contentStart + i]!;
    // DER: the shortest length form
    if (len < 0x80 || buf[contentStart] === 0) throw new DerError('non-minimal length');
    contentStart += n;
  }
  const end = contentStart + len;
  if (end > limit) throw new DerError('truncated');
  return { tag, start: at, contentStart, end };
}

/** The TLVs directly inside a constructed TLV, in order. */
export function children(buf: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.contentStart; at < parent.end;) {
    const t = readTlv(buf, at, parent.end);
    out.push(t);
    at = t.end;
  }
  return out;
}

export function expectTag(t: Tlv | undefined, tag: number, what: string): Tlv {
  if (t === undefined || t.tag !== tag) throw new DerError(`${what}: expected tag 0x${tag.toString(16)}`);
  return t;
}

export function bytesOf(buf: Uint8Array, t: Tlv): Uint8Array {
  return buf.subarray(t.start, t.end);
}

export function contentOf(buf: Uint8Array, t: Tlv): Uint8Array {
  return buf.subarray(t.contentStart, t.end);
}

/** A TLV with `content` (one or several parts, concatenated). */
export function tlv(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const head = n < 0x80 ? [tag, n] : n < 0x100 ? [tag, 0x81, n] : n < 0x10000 ? [tag, 0x82, n >> 8, n & 0xff] : [tag, 0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from(head), body]);
}

export const seq = (...c: Uint8Array[]): Buffer => tlv(0x30, ...c);
export const octets = (...c: Uint8Array[]): Buffer => tlv(0x04, ...c);

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5), whole seconds, UTC. */
export function time(d: Date): Buffer {
  const iso = d.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-:T]/g, '');
  const year = d.getUTCFullYear();
  if (year >= 1950 && year < 2050) return tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii'));
  return tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

/** Decodes an OID's content bytes to dotted form. */
export function oidText(content: Uint8Array): string {
  const parts: number[] = [];
  let v = 0;
  for (const b of content) {
    v = v * 128 + (b & 0x7f);
    if ((b & 0x80) === 0) {
      parts.push(v);
      v = 0;
    }
  }
  if (parts.length === 0) return '';
  const first = parts[0]!;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...parts.slice(1)].join('.');
}
