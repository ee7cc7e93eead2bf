/**
 * The content types a case attachment may have, each verified from the bytes themselves (the
 * header a client sends is a claim, not a fact). Only the first `SNIFF_BYTES` are examined, while
 * the upload streams: a file that fails is refused before anything is stored.
 */
import { ServerError } from '../../errors/server-error.js';

export const SNIFF_BYTES = 8192;

export const ATTACHMENT_TYPES = [
  'application/pdf',
  'image/png',
  'image/jpeg',
  'application/zip',
  'application/gzip',
  'text/plain',
  'text/csv',
  'application/json',
] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

const MAGIC: readonly [AttachmentType, readonly number[]][] = [
  ['application/pdf', [0x25, 0x50, 0x44, 0x46, 0x2d]], // %PDF-
  ['image/png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['application/zip', [0x50, 0x4b, 0x03, 0x04]], // PK\3\4 (an empty archive is PK\5\6)
  ['application/zip', [0x50, 0x4b, 0x05, 0x06]],
  ['application/gzip', [0x1f, 0x8b, 0x08]],
];

function startsWith(head: Uint8Array, magic: readonly number[]): boolean {
  return head.length >= magic.length && magic.every((b, i) => head[i] === b);
}

/**
 * UTF-8 text without NUL or control characters other than tab, newline, carriage return and
 * form feed. When the head is a prefix of the file, a multi-byte character cut at its end is
 * allowed.
 */
export function isText(head: Uint8Array, complete: boolean): boolean {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let text: string | undefined;
  for (let cut = 0; cut <= (complete ? 0 : 3) && text === undefined; cut++) {
    try {
      text = decoder.decode(head.subarray(0, head.length - cut));
    } catch {
      text = undefined;
    }
  }
  // eslint-disable-next-line no-control-regex -- a text file has no control characters but TAB, LF, CR, FF
  return text !== undefined && !/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text);
}

/** What the bytes are: one of the binary types by signature, `text` for text, or undefined. */
export function sniff(head: Uint8Array, complete: boolean): AttachmentType | 'text' | undefined {
  for (const [type, magic] of MAGIC) if (startsWith(head, magic)) return type;
  return isText(head, complete) ? 'text' : undefined;
}

const TEXT_TYPES: readonly string[] = ['text/plain', 'text/csv', 'application/json'];

/**
 * The content type to store for a file declared as `declared` (its parameters ignored) whose
 * first bytes are `head`: the declared type when the bytes are of it; for
 * `application/octet-stream` (or no type), what the bytes are. ATTACHMENT_TYPE otherwise.
 */
export function verifiedType(declared: string | undefined, head: Uint8Array, complete: boolean): AttachmentType {
  const claim = (declared ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
  const allowed = (ATTACHMENT_TYPES as readonly string[]).includes(claim);
  if (!allowed && claim !== 'application/octet-stream') {
    throw new ServerError('ATTACHMENT_TYPE', `file: content type ${JSON.stringify(claim)} is not allowed (allowed: ${ATTACHMENT_TYPES.join(', ')})`);
  }
  const seen = sniff(head, complete);
  if (claim === 'application/octet-stream') {
    if (seen === undefined) throw new ServerError('ATTACHMENT_TYPE', `file: the bytes are none of the allowed types (${ATTACHMENT_TYPES.join(', ')})`);
    return seen === 'text' ? 'text/plain' : seen;
  }
  if (TEXT_TYPES.includes(claim)) {
    if (seen !== 'text') throw new ServerError('ATTACHMENT_TYPE', `file: declared ${claim} but the bytes are not UTF-8 text`);
    if (claim === 'application/json' && !/^\s*[[{]/.test(new TextDecoder().decode(head)))
      throw new ServerError('ATTACHMENT_TYPE', 'file: declared application/json but the bytes do not start a JSON object or array');
    return claim as AttachmentType;
  }
  if (seen !== claim)
    throw new ServerError(
      'ATTACHMENT_TYPE',
      `file: declared ${claim} but the bytes are ${seen === undefined ? 'of no allowed type' : seen === 'text' ? 'text' : seen}`,
    );
  return claim as AttachmentType;
}
