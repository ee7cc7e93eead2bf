/**
 * The step of an attachment that commits before its record: the upload streams into the
 * content-addressed blob store while it is hashed, measured against the byte bound and, from
 * its first bytes, checked against the content-type allowlist. Any refusal happens while
 * streaming, so the blob store discards its temporary file and nothing is stored; the record
 * and its audit row follow in `recordAttachment`.
 */
import type { Readable } from 'node:stream';
import { isBlobError, type BlobStore } from '../../blobs/index.js';
import { ServerError } from '../../errors/server-error.js';
import type { AttachmentLimits } from './limits.js';
import { SNIFF_BYTES, verifiedType, type AttachmentType } from './sniff.js';

export interface StoredAttachment {
  digest: string;
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
  let contentType: AttachmentType | undefined;
  async function* sniffed(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    const head: Uint8Array[] = [];
    let headBytes = 0;
    for await (const chunk of source) {
      if (contentType !== undefined) {
        yield chunk;
        continue;
      }
      head.push(chunk);
      headBytes += chunk.byteLength;
      if (headBytes >= SNIFF_BYTES) {
        const bytes = Buffer.concat(head);
        contentType = verifiedType(declaredType, bytes.subarray(0, SNIFF_BYTES), false);
        yield bytes;
      }
    }
    if (contentType === undefined) {
      const bytes = Buffer.concat(head);
      if (bytes.length === 0) throw new ServerError('ATTACHMENT_INVALID', 'file: is empty');
      contentType = verifiedType(declaredType, bytes, true);
      yield bytes;
    }
  }
  try {
    const info = await blobs.put(sniffed(file), { maxBytes: bound.maxBytes });
    return { digest: info.digest, length: info.length, contentType: contentType! };
  } catch (e) {
    if (isBlobError(e, 'BLOB_TOO_LARGE')) throw new ServerError('ATTACHMENT_TOO_LARGE', `file: larger than ${bound.name}`, { cause: e });
    if (isBlobError(e, 'BLOB_WRITE_FAILED') && e.cause instanceof ServerError) throw e.cause;
    throw e;
  }
}
