/**
 * The one DER (X.690 distinguished encoding) reader and writer of the service, exported as
 * `@svc/release-core/der`: keys and certificates here, CSRs and device certificates on the
 * server's enrollment path (apps/server/src/device-channel/device-cert.ts).
 *
 * Reading: single-byte tags, definite minimal lengths, nesting by offsets into the original
 * buffer (no copies). Every violation throws DerError; callers turn it into KEY_INVALID,
 * CERT_INVALID or a 400 naming the structure they were reading.
 *
 * Writing: `tlv` and its shorthands build definite-length TLVs from parts, into one new
 * Uint8Array each (no Buffer: the module runs in the browser too).
 */
export class DerError extends Error {
  override readonly name = 'DerError';
}

export interface Tlv {
  readonly tag: number;
  /** offset of the tag byte */
  readonly start: number;
  /** offset of the first content byte */
  readonly valueStart: number;
  /** offset just past the content */
  readonly end: number;
}

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

export function readTlv(bytes: Uint8Array, offset: number, limit: number = bytes.length): Tlv {
  if (offset + 2 > limit) throw new DerError('truncated header');
  const tag = bytes[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError('multi-byte tags are not supported');
  let len = bytes[offset + 1]!;
  let valueStart = offset + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0) throw new DerError('indefinite length is not DER');
    if (n > 4) throw new DerError('length too large');
    if (valueStart + n > limit) throw new DerError('truncated length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + bytes[valueStart + i]!;
    if (bytes[valueStart] === 0 || len < 0x80) throw new DerError('length is not minimally encoded');
    valueStart += n;
  }
  const end = valueStart + len;
  if (end > limit) throw new DerError('content runs past its container');
  return { tag, start: offset, valueStart, end };
}

/** Read exactly one TLV spanning the whole range (no trailing bytes). */
export function readWhole(bytes: Uint8Array, start = 0, end = bytes.length): Tlv {
  const t = readTlv(bytes, start, end);
  if (t.end !== end) throw new DerError('trailing bytes after structure');
  return t;
}

/** The children of a constructed TLV, in order. */
export function children(bytes: Uint8Array, parent: Tlv): Tlv[] {
  if ((parent.tag & 0x20) === 0) throw new DerError(`tag 0x${parent.tag.toString(16)} is not constructed`);
  const out: Tlv[] = [];
  let off = parent.valueStart;
  while (off < parent.end) {
    const t = readTlv(bytes, off, parent.end);
    out.push(t);
    off = t.end;
  }
  return out;
}

export function expectTag(t: Tlv | undefined, tag: number, what: string): Tlv {
  if (!t) throw new DerError(`${what}: missing`);
  if (t.tag !== tag) throw new DerError(`${what}: expected tag 0x${tag.toString(16)}, got 0x${t.tag.toString(16)}`);
  return t;
}

export function value(bytes: Uint8Array, t: Tlv): Uint8Array {
  return bytes.subarray(t.valueStart, t.end);
}

export function whole(bytes: Uint8Array, t: Tlv): Uint8Array {
  return bytes.subarray(t.start, t.end);
}

/** Dotted OID text. */
export function oid(bytes: Uint8Array, t: Tlv): string {
  const v = value(bytes, t);
  if (v.length === 0) throw new DerError('empty OID');
  const parts: number[] = [];
  let n = 0;
  for (let i = 0; i < v.length; i++) {
    const b = v[i]!;
    if (n === 0 && b === 0x80) throw new DerError('OID arc not minimally encoded');
    n = n * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      parts.push(n);
      n = 0;
    } else if (i === v.length - 1) throw new DerError('truncated OID');
  }
  const first = parts[0]!;
  let out = first < 40 ? `0.${first}` : first < 80 ? `1.${first - 40}` : `2.${first - 80}`;
  for (let i = 1; i < parts.length; i++) out += `.${parts[i]!}`;
  return out;
}

/**
 * One character per byte (Latin-1). The DER reader runs once per device certificate a server
 * has not seen yet (each receipt of a large fleet): `String.fromCharCode(...bytes)` walks the
 * typed array through its iterator into an argument list, several times the cost of this loop
 * for the short strings of a certificate.
 */
export function latin1(v: Uint8Array): string {
  let s = '';
  for (let i = 0; i < v.length; i++) s += String.fromCharCode(v[i]!);
  return s;
}

const utf8Fatal = new TextDecoder('utf-8', { fatal: true });

/** Content of a BIT STRING with no unused bits (keys, signatures). */
export function bitStringBytes(bytes: Uint8Array, t: Tlv): Uint8Array {
  const v = value(bytes, t);
  if (v.length === 0 || v[0] !== 0) throw new DerError('BIT STRING with unused bits');
  return v.subarray(1);
}

export function smallInteger(bytes: Uint8Array, t: Tlv): number {
  const v = value(bytes, t);
  if (v.length === 0 || v.length > 4) throw new DerError('INTEGER out of range');
  if (v.length > 1 && ((v[0] === 0 && !(v[1]! & 0x80)) || (v[0] === 0xff && v[1]! & 0x80))) throw new DerError('INTEGER not minimally encoded');
  if (v[0]! & 0x80) throw new DerError('negative INTEGER');
  let n = 0;
  for (const b of v) n = n * 256 + b;
  return n;
}

/** UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSSZ), per RFC 5280 4.1.2.5. */
export function time(bytes: Uint8Array, t: Tlv): Date {
  const s = latin1(value(bytes, t));
  let m: RegExpExecArray | null;
  let year: number;
  if (t.tag === TAG.UTC_TIME) {
    m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s);
    if (!m) throw new DerError(`bad UTCTime ${JSON.stringify(s)}`);
    const yy = Number(m[1]);
    year = yy >= 50 ? 1900 + yy : 2000 + yy;
  } else if (t.tag === TAG.GENERALIZED_TIME) {
    m = /^(\d\d\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z$/.exec(s);
    if (!m) throw new DerError(`bad GeneralizedTime ${JSON.stringify(s)}`);
    year = Number(m[1]);
  } else throw new DerError('expected a time');
  const [mo, d, h, mi, se] = [m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number];
  const date = new Date(Date.UTC(year, mo - 1, d, h, mi, se));
  if (date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d || h > 23 || mi > 59 || se > 59) throw new DerError(`invalid date ${JSON.stringify(s)}`);
  return date;
}

/** Text of a directory string (UTF8String, PrintableString, IA5String). */
export function text(bytes: Uint8Array, t: Tlv): string {
  const v = value(bytes, t);
  // one decoder for every call: without `stream` each decode() is complete and independent
  if (t.tag === TAG.UTF8_STRING) return utf8Fatal.decode(v);
  if (t.tag === TAG.PRINTABLE_STRING || t.tag === TAG.IA5_STRING) {
    for (let i = 0; i < v.length; i++) if (v[i]! > 0x7f) throw new DerError('non-ASCII byte in an ASCII string');
    return latin1(v);
  }
  throw new DerError(`unsupported string tag 0x${t.tag.toString(16)}`);
}

// --- writing ---------------------------------------------------------------------------------

/** A TLV with `content` (one or several parts, concatenated), its length in the shortest form. */
export function tlv(tag: number, ...content: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of content) n += c.length;
  if (n >= 0x1000000) throw new DerError('content too large to encode');
  const head = n < 0x80 ? 2 : n < 0x100 ? 3 : n < 0x10000 ? 4 : 5;
  const out = new Uint8Array(head + n);
  out[0] = tag;
  if (head === 2) out[1] = n;
  else {
    out[1] = 0x80 | (head - 2);
    for (let i = head - 1, v = n; i >= 2; i--, v >>>= 8) out[i] = v & 0xff;
  }
  let at = head;
  for (const c of content) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export const seq = (...content: Uint8Array[]): Uint8Array => tlv(TAG.SEQUENCE, ...content);
export const octets = (...content: Uint8Array[]): Uint8Array => tlv(TAG.OCTET_STRING, ...content);

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), whole seconds, UTC. */
export function encodeTime(d: Date): Uint8Array {
  const digits = d.toISOString().slice(0, 19).replace(/[-:T]/g, '');
  const year = d.getUTCFullYear();
  const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
  if (year >= 1950 && year < 2050) return tlv(TAG.UTC_TIME, ascii(`${digits.slice(2)}Z`));
  return tlv(TAG.GENERALIZED_TIME, ascii(`${digits}Z`));
}
