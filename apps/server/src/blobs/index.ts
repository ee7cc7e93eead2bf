/**
 * Content-addressed blob storage for target payloads.
 *
 *   const blobs = new FsBlobStore(join(dataDir, 'blobs'));
 *   const { digest, length } = await blobs.put(request.file, { maxBytes });
 *   const { stream, totalLength, range } = await blobs.get(digest, parseRangeHeader(req.headers.range));
 */
export type { BlobStore, BlobInfo, BlobPutOptions, BlobReadResult } from './blob-store.js';
export { FsBlobStore } from './fs-blob-store.js';
export { BlobError, isBlobError, type BlobErrorCode } from './errors.js';
export { assertBlobDigest } from './digest.js';
export { parseRangeHeader, resolveRange, type ByteRange, type ByteRangeRequest } from './range.js';
