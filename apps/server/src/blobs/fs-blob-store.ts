import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { digestFromHex, digestHex, type Digest } from '@svc/release-core';
import type { BlobInfo, BlobPutOptions, BlobReadResult, BlobStore } from './blob-store.js';
import { assertBlobDigest } from './digest.js';
import { BlobError } from './errors.js';
import { resolveRange, type ByteRangeRequest } from './range.js';

/**
 * Filesystem BlobStore: `<root>/sha256/<hex>` holds the bytes, `<root>/tmp/` holds
 * uploads in progress. A blob appears under its digest only through an atomic
 * rename after its bytes are hashed and fsynced, so a reader (or the metadata
 * commit that follows a put) never sees a partial file, and a crash mid-upload
 * leaves only a stray temp file.
 */
export class FsBlobStore implements BlobStore {
  readonly root: string;
  #ready: Promise<void> | undefined;

  /** `root` is usually `SVC_DATA_DIR/blobs`. */
  constructor(root: string) {
    this.root = root;
  }

  /** Path of a blob's bytes; exposed for tests and for a sendfile-style transport. */
  pathOf(digest: Digest): string {
    return join(this.root, 'sha256', digestHex(assertBlobDigest(digest)));
  }

  async put(source: AsyncIterable<Uint8Array> | Readable, options: BlobPutOptions = {}): Promise<BlobInfo> {
    // a stream that fails while the directories are made (a client gone) keeps its error for
    // the pipeline below, which reports it; it is never an unhandled 'error' event
    if (source instanceof EventEmitter) source.on('error', () => undefined);
    await this.#ensureDirs();
    const maxBytes = options.maxBytes ?? Number.MAX_SAFE_INTEGER;
    const tmp = join(this.root, 'tmp', `${randomUUID()}.part`);
    const hash = createHash('sha256');
    let length = 0;
    // The temp file exists before a byte is read: a source that fails at once (an upload over
    // its bound) must not race a write stream still opening it, which would create the file
    // after the cleanup below had already run.
    let file: Awaited<ReturnType<typeof open>> | undefined;
    try {
      file = await open(tmp, 'wx', 0o600);
      await pipeline(
        source,
        async function* measure(chunks: AsyncIterable<Uint8Array | string>) {
          for await (const raw of chunks) {
            const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
            length += chunk.byteLength;
            // bound untrusted uploads while streaming, not after
            if (length > maxBytes) throw new BlobError('BLOB_TOO_LARGE', `upload exceeds the limit of ${maxBytes} bytes`);
            hash.update(chunk);
            yield chunk;
          }
        },
        file.createWriteStream(),
      );
      const digest = digestFromHex(hash.digest('hex'));
      if (options.expectedDigest !== undefined && options.expectedDigest !== digest) {
        throw new BlobError('BLOB_DIGEST_MISMATCH', `upload hashed to ${digest}, expected ${options.expectedDigest}`);
      }
      // Durable before visible: the metadata that will name this digest is committed after put returns.
      await fsyncPath(tmp, 'r+');
      await chmod(tmp, 0o444);
      await rename(tmp, this.pathOf(digest));
      await fsyncPath(join(this.root, 'sha256'), 'r');
      return { digest, length };
    } catch (e) {
      if (file !== undefined) await file.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      if (e instanceof BlobError) throw e;
      throw new BlobError('BLOB_WRITE_FAILED', `storing the upload failed: ${(e as Error).message}`, { cause: e });
    }
  }

  async get(digest: Digest, range?: ByteRangeRequest): Promise<BlobReadResult> {
    const info = await this.stat(digest);
    if (!info) throw new BlobError('BLOB_NOT_FOUND', `blob ${digest} does not exist`);
    const path = this.pathOf(digest);
    if (range === undefined) return { stream: createReadStream(path), totalLength: info.length };
    const resolved = resolveRange(range, info.length);
    return {
      stream: createReadStream(path, { start: resolved.start, end: resolved.end }),
      totalLength: info.length,
      range: resolved,
    };
  }

  async stat(digest: Digest): Promise<BlobInfo | undefined> {
    try {
      const st = await stat(this.pathOf(digest));
      return st.isFile() ? { digest, length: st.size } : undefined;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async has(digest: Digest): Promise<boolean> {
    return (await this.stat(digest)) !== undefined;
  }

  /** The filesystem store collects no garbage: the same as stat. */
  retain(digest: Digest): Promise<BlobInfo | undefined> {
    return this.stat(digest);
  }

  #ensureDirs(): Promise<void> {
    this.#ready ??= (async () => {
      await mkdir(join(this.root, 'sha256'), { recursive: true, mode: 0o700 });
      await mkdir(join(this.root, 'tmp'), { recursive: true, mode: 0o700 });
    })();
    return this.#ready;
  }
}

async function fsyncPath(path: string, flags: 'r' | 'r+'): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
