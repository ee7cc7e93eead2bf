/**
 * The step of an attachment that commits before its record: the first bytes of the upload are
 * checked against the content-type allowlist, then the whole upload streams into the
 * content-addressed blob store while it is hashed and measured against the byte bound. A refusal
 * happens before the blob store starts or while it streams (it then discards its temporary
 * file): nothing is stored. The record and its audit row follow in `recordAttachment`.
 */
import type { Digest } from '@svc/release-core';
import type { Readable } from 'node:stream';
import { isBlobError, type BlobStore } from '../../blobs/index.js';
import { ServerError } from '../../errors/server-error.js';
import type { AttachmentLimits } from './limits.js';
import { SNIFF_BYTES, verifiedType, type AttachmentType } from './sniff.js';

export interface StoredAttachment {
  digest: Digest;
  length: number;
  contentType: AttachmentType;
}

/** Which bound a byte cap stands for: the message of a 413 names it. */
export interface ByteBound {
  maxBytes: number;
  /** e.g. `the per-file limit of 26214400 bytes (fileBytes)`. */
  name: string;
}

/** The byte bound of the next file of a case holding `caseBytesUsed` bytes of attachments. */
export function byteBound(limits: AttachmentLimits, caseBytesUsed: number): ByteBound {
  const left = Math.max(0, limits.caseBytes - caseBytesUsed);
  return left < limits.fileBytes
    ? { maxBytes: left, name: `the case's total attachment limit of ${limits.caseBytes} bytes (caseBytes; ${left} bytes left)` }
    : { maxBytes: limits.fileBytes, name: `the per-file limit of ${limits.fileBytes} bytes (fileBytes)` };
}

export async function storeAttachmentBytes(blobs: BlobStore, file: Readable, declaredType: string | undefined, bound: ByteBound): Promise<StoredAttachment> {
  // the head is read and judged before the blob store opens a temporary file for the upload
  const chunks = (file as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let complete = false;
  while (headBytes < SNIFF_BYTES) {
    const next = await chunks.next();
    if (next.done === true) {
      complete = true;
      break;
    }
    head.push(next.value);
    headBytes += next.value.byteLength;
  }
  const first = Buffer.concat(head);
  if (first.length === 0) throw new ServerError('ATTACHMENT_INVALID', 'file: is empty');
  const contentType = verifiedType(declaredType, complete ? first : first.subarray(0, SNIFF_BYTES), complete);
  async function* whole(): AsyncGenerator<Uint8Array> {
    yield first;
    if (complete) return;
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value;
  }
  try {
    const info = await blobs.put(whole(), { maxBytes: bound.maxBytes });
    return { digest: info.digest, length: info.length, contentType };
  } catch (e) {
    if (isBlobError(e, 'BLOB_TOO_LARGE')) throw new ServerError('ATTACHMENT_TOO_LARGE', `file: larger than ${bound.name}`, { cause: e });
    throw e;
  }
}
