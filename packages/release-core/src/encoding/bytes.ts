/**
 * Byte helpers shared by every module. Node's Buffer is used when present because it is
 * native (the verify hot path decodes a multi-kilobyte base64 payload); a pure fallback keeps
 * the package usable in a browser bundle with the noble provider.
 */
const NodeBuffer: typeof Buffer | undefined = (globalThis as { Buffer?: typeof Buffer }).Buffer;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function utf8(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

/** Strict UTF-8 decoding: invalid sequences throw instead of becoming U+FFFD. */
export function fromUtf8(bytes: Uint8Array): string {
  return utf8Decoder.decode(bytes);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export function toHex(bytes: Uint8Array): string {
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  let s = '';
  for (const b of bytes) s += HEX[b];
  return s;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_INDEX = new Int16Array(128).fill(-1);
for (let i = 0; i < B64.length; i++) B64_INDEX[B64.charCodeAt(i)] = i;

/** Standard base64 with padding (RFC 4648 section 4). */
export function toBase64(bytes: Uint8Array): string {
  if (NodeBuffer) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + B64[(n >> 6) & 63]! + B64[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + '==';
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += B64[n >> 18]! + B64[(n >> 12) & 63]! + B64[(n >> 6) & 63]! + '=';
  }
  return out;
}

/**
 * Decode standard padded base64, refusing every other spelling of the same bytes
 * (URL-safe alphabet, missing padding, whitespace, non-zero trailing bits): a document has
 * exactly one accepted encoding, so two envelopes with equal bytes are equal strings.
 * Returns undefined when the text is not canonical base64; callers name the field.
 */
export function fromBase64Strict(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  if (NodeBuffer) {
    const buf = NodeBuffer.from(text, 'base64');
    // Buffer's decoder is lenient; the canonical re-encoding must give back the same text.
    if (buf.toString('base64') !== text) return undefined;
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  return pureDecode(text);
}

function pureDecode(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const out = new Uint8Array((text.length / 4) * 3 - pad);
  let o = 0;
  for (let i = 0; i < text.length; i += 4) {
    const last = i + 4 === text.length;
    const v = [0, 0, 0, 0];
    for (let j = 0; j < 4; j++) {
      const c = text.charCodeAt(i + j);
      if (last && j >= 4 - pad) {
        if (c !== 61) return undefined;
        continue;
      }
      const d = c < 128 ? B64_INDEX[c]! : -1;
      if (d < 0) return undefined;
      v[j] = d;
    }
    const n = (v[0]! << 18) | (v[1]! << 12) | (v[2]! << 6) | v[3]!;
    out[o++] = n >> 16;
    if (o < out.length) out[o++] = (n >> 8) & 255;
    else if (last && (n & 0xffff) !== 0) return undefined;
    if (o < out.length) out[o++] = n & 255;
    else if (last && pad === 1 && (n & 0xff) !== 0) return undefined;
  }
  return out;
}

/** Exposed for tests: the pure decoder must agree with the Buffer path. */
export const pureBase64Decode = pureDecode;
