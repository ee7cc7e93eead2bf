import { BlobError } from './errors.js';

/** An inclusive byte range, as in HTTP `Range: bytes=start-end`. */
export interface ByteRange {
  start: number;
  end: number;
}

/** What a caller asks for before the length is known: HTTP's three single-range forms. */
export type ByteRangeRequest = { kind: 'from-to'; start: number; end: number } | { kind: 'from'; start: number } | { kind: 'suffix'; length: number };

const RANGE_RE = /^bytes=(\d{0,15})-(\d{0,15})$/;

/**
 * Parses an HTTP Range header (RFC 9110 14.1.2). Only a single range is supported;
 * anything else (several ranges, other units, garbage) is BLOB_RANGE_INVALID so the
 * transport answers 416 instead of silently sending the whole file.
 * Returns undefined when there is no header.
 */
export function parseRangeHeader(header: string | undefined): ByteRangeRequest | undefined {
  if (header === undefined) return undefined;
  const m = RANGE_RE.exec(header.trim());
  if (!m) throw new BlobError('BLOB_RANGE_INVALID', 'range must be a single "bytes=start-end" range');
  const [, a = '', b = ''] = m;
  if (a === '' && b === '') throw new BlobError('BLOB_RANGE_INVALID', 'range must give a start or a suffix length');
  if (a === '') return { kind: 'suffix', length: Number(b) };
  if (b === '') return { kind: 'from', start: Number(a) };
  const start = Number(a);
  const end = Number(b);
  if (end < start) throw new BlobError('BLOB_RANGE_INVALID', 'range end must not be before its start');
  return { kind: 'from-to', start, end };
}

/** Resolves a request against the total length; unsatisfiable ranges are BLOB_RANGE_INVALID. */
export function resolveRange(req: ByteRangeRequest, total: number): ByteRange {
  if (req.kind === 'suffix') {
    if (req.length === 0 || total === 0) throw new BlobError('BLOB_RANGE_INVALID', 'range is not satisfiable');
    return { start: Math.max(0, total - req.length), end: total - 1 };
  }
  if (req.start >= total) throw new BlobError('BLOB_RANGE_INVALID', 'range start is beyond the end of the file');
  const end = req.kind === 'from' ? total - 1 : Math.min(req.end, total - 1);
  return { start: req.start, end };
}
