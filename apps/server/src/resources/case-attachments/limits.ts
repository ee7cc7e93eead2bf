import { SERVER_LIMITS } from '../../limits.js';

/**
 * Bounds of case attachments (docs/article-14.md "Limits"): the defaults are
 * `SERVER_LIMITS.attachments`; a server may lower or raise them through
 * `AppContext.evidence.attachmentLimits` (tests use small ones); every check reads the merged object.
 */
export interface AttachmentLimits {
  /** Bytes of one file. */
  fileBytes: number;
  /** Attachments of one case, redacted ones not counted. */
  filesPerCase: number;
  /** Bytes of all of a case's attachments, redacted ones not counted. */
  caseBytes: number;
  /** Characters of a stored file name (longer names are shortened, keeping the extension). */
  filenameChars: number;
  /** Characters of a description. */
  descriptionChars: number;
}

export function attachmentLimits(overrides: Partial<AttachmentLimits> | undefined): AttachmentLimits {
  return { ...SERVER_LIMITS.attachments, ...overrides };
}

/**
 * A file name as the client sent it, made safe to store and to send back in a
 * Content-Disposition header: the last path segment only, NFC, no control characters, letters,
 * digits, space and `._()+-` kept (anything else becomes `_`), no leading dots, at most `max`
 * characters with the extension kept; `attachment` when nothing is left.
 */
export function sanitizeFilename(raw: string | undefined, max: number): string {
  let name = (raw ?? '').normalize('NFC').split(/[\\/]/).pop() ?? '';
  name = name
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .replace(/[^\p{L}\p{N} ._()+-]/gu, '_')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[.\s]+/, '');
  if ([...name].length > max) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
    name = [...name.slice(0, name.length - ext.length)].slice(0, max - ext.length).join('') + ext;
  }
  return name === '' ? 'attachment' : name;
}
