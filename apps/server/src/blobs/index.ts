/**
 * Content-addressed blob storage for target payloads.
 *
 *   const blobs = openBlobStore(blobStoreKind(config.blobStore, config.databaseUrl), { db, dataDir });
 *   const { digest, length } = await blobs.put(request.file, { maxBytes });
 *   const { stream, totalLength, range } = await blobs.get(digest, parseRangeHeader(req.headers.range));
 */
export type { BlobStore, BlobInfo, BlobPutOptions, BlobReadResult } from './blob-store.js';
export { FsBlobStore } from './fs-blob-store.js';
export { PgBlobStore, type PgBlobStoreOptions } from './pg-blob-store.js';
export { collectBlobGarbage, type BlobGcResult } from './pg-blob-gc.js';
export { blobStoreKind, blobStoreWarning, openBlobStore, type BlobStoreKind } from './selection.js';
export { BlobError, isBlobError, type BlobErrorCode } from './errors.js';
export { assertBlobDigest } from './digest.js';
export { parseRangeHeader, resolveRange, type ByteRange, type ByteRangeRequest } from './range.js';
